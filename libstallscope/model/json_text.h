// Compact JSON text of a tree, byte for byte what nlohmann's dump() gives, without its per-character UTF-8
// state machine: the periodic `--json` CLI writes ~50 KB per sample on a big node, and dump() was a
// tenth of its CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// Appends dump()'s text of `value`; false (with `out` partly written) when the tree holds what this does
// not mirror exactly: a string of ill-formed UTF-8 (dump() throws on it), binary or discarded values.
// Then call dump().
bool append_compact_json(std::string& out, const Json& value);

// The scalars as append_compact_json (and dump()) writes them, for writers that produce the same text
// from plain structs without building a tree (snapshot_json_text.h). Each writes at `out`, which must have
// room for what it may write, and returns the end of what it wrote.
constexpr std::size_t kMaxCompactNumberChars = 32;  // any number below, with its sign (at most 25)
// A string, quoted and escaped: room for max_compact_string_chars(s). nullptr (and nothing sure about
// what was written) when it is not well-formed UTF-8, where dump() throws.
char* write_compact_string(char* out, std::string_view s);
constexpr std::size_t max_compact_string_chars(std::string_view s) {
    return 6 * s.size() + 2;  // every byte a \u00xx escape, and the quotes
}
// number_float: shortest round-trip digits ("1.0", "2.5e-05"); "null" when not finite.
char* write_compact_float(char* out, double v);
char* write_compact_int(char* out, std::int64_t v);    // number_integer
char* write_compact_uint(char* out, std::uint64_t v);  // number_unsigned

}  // namespace stallscope
