// Bounds checked before a job-owned JSON file is turned into a document. A verdict file is at most
// 4 MiB, but nlohmann's ordered_json costs ~200x the text for small values (1.4 M empty GPU objects in
// 4 MiB: 0.84 GB), and a value nested 100 000 deep crashes the document build itself (growing an
// ordered object copies its members recursively: stack overflow). So one streaming pass (nlohmann's
// SAX parser, which keeps its own stack on the heap and builds nothing) counts first, and the file is
// refused, with a message naming the file and what is over, before any document exists.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

struct JsonBounds {
    std::size_t max_depth = 64;          // containers inside containers; a verdict uses 5
    std::size_t max_values = 1u << 18;   // values of every kind in the whole file
    std::size_t max_members = 1u << 16;  // entries of any one array or object
    struct Named {
        std::string path;  // dotted, from the top: "node_stats.gpus"
        std::size_t max_members;
        const char* what;  // "GPUs"
    };
    std::vector<Named> named;  // tighter caps for the lists a reader turns into structs
};

// The bounds of a verdict.<step>.<host>.json: <= 1024 GPUs, <= 4096 ports and reasons per node.
const JsonBounds& verdict_file_bounds();

// True when `text` is JSON within `bounds`; else false and `why` says what is over (or where the text
// stops being JSON), without the file's name.
bool within_json_bounds(std::string_view text, const JsonBounds& bounds, std::string& why);

// The same check and, in the same pass, the document, with only the top-level members `keep` accepts (a
// verdict file's inventory, a third of it, is never read by the merge). Each value is counted before
// it is added, so what exists when a bound stops the parse is within the bounds, as the whole document
// is when it passes: the one pass costs what the check alone did, and half of the two. False as
// within_json_bounds is, with `why` the same; `out` is then unspecified.
bool parse_within_json_bounds(std::string_view text, const JsonBounds& bounds,
                              const std::function<bool(std::string_view key)>& keep, Json& out,
                              std::string& why);

}  // namespace stallscope
