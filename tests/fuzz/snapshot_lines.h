// The fuzzer's bytes as a sequence of samples, shared by the targets that drive writers and the profiler
// with snapshots: each line that parses as a JSON object, read with snapshot_from_json.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope::fuzz {

struct SnapshotLine {
    Snapshot snapshot;
    std::vector<std::string> problems;  // snapshot_from_json's: fields of the wrong type, left empty
};

// At most `max` of them, in input order; lines that are not JSON objects are skipped.
inline std::vector<SnapshotLine> snapshot_lines(std::string_view text, std::size_t max) {
    std::vector<SnapshotLine> out;
    for (std::size_t start = 0; start < text.size() && out.size() < max;) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        const Json object = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
        if (object.is_discarded() || !object.is_object()) continue;
        SnapshotLine& s = out.emplace_back();
        s.snapshot = snapshot_from_json(object, s.problems);
    }
    return out;
}

}  // namespace stallscope::fuzz
