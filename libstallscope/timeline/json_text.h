// Compact JSON text of a tree, byte for byte what nlohmann's dump() gives, without its per-character UTF-8
// state machine: the periodic `--json` CLI writes ~50 KB per sample on a big node, and dump() was a
// tenth of its CPU.
#pragma once

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
// from plain structs without building a tree (snapshot_json_text.h).
// A string, quoted and escaped; false (nothing sure about `out`) when it is not well-formed UTF-8.
bool append_compact_string(std::string& out, std::string_view s);
// number_float: shortest round-trip digits ("1.0", "2.5e-05"); "null" when not finite.
void append_compact_float(std::string& out, double v);
void append_compact_int(std::string& out, std::int64_t v);    // number_integer
void append_compact_uint(std::string& out, std::uint64_t v);  // number_unsigned

}  // namespace stallscope
