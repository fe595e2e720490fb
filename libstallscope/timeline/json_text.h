// Compact JSON text of a tree, byte for byte what nlohmann's dump() gives, without its per-character UTF-8
// state machine: the periodic `--json` CLI writes ~50 KB per sample on a big node, and dump() was a
// tenth of its CPU.
#pragma once

#include <string>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// Appends dump()'s text of `value`; false (with `out` partly written) when the tree holds what this does
// not mirror exactly: a non-ASCII string (dump() checks its UTF-8 and may throw), binary or discarded
// values. Then call dump().
bool append_compact_json(std::string& out, const Json& value);

}  // namespace stallscope
