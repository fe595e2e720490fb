#include "helper/replay_timeline.h"

#include <unistd.h>

#include <cstdio>

#include "libstallscope/rules/profiler.h"

namespace stallscope::cli {

std::optional<Thresholds> thresholds_from_header(const Json& header, std::string& error) {
    if (!header.is_object() || !header.contains("thresholds") || !header["thresholds"].is_object())
        return std::nullopt;
    std::string text;
    for (auto& [key, value] : header["thresholds"].items())
        if (value.is_number()) text += key + " = " + value.dump() + "\n";
    return parse_thresholds(text, "timeline header", error);
}

bool replay_timeline(const std::string& path, const std::optional<Thresholds>& override_thresholds,
                     bool progress, ReplayResult& out, std::string& error) {
    if (!read_timeline(path, out.contents, error)) return false;
    Thresholds thresholds;
    if (override_thresholds) {
        thresholds = *override_thresholds;
    } else {
        std::string header_error;
        if (auto recorded = thresholds_from_header(out.contents.header, header_error))
            thresholds = *recorded;
        else if (!header_error.empty())
            out.contents.warnings.push_back(path + ": header thresholds unusable (" + header_error +
                                            "), using defaults");
    }
    progress = progress && ::isatty(STDERR_FILENO);
    Profiler profiler(thresholds);
    std::size_t n = 0;
    for (const auto& snapshot : out.contents.samples) {
        profiler.observe(snapshot);
        if (progress && ++n % 100000 == 0) std::fprintf(stderr, "\r%s: %zu samples", path.c_str(), n);
    }
    if (progress && n >= 100000) std::fprintf(stderr, "\n");
    out.verdict = profiler.verdict();
    if (out.contents.recorded_verdict.is_object()) {
        Json recorded = out.contents.recorded_verdict;
        recorded.erase("type");
        out.matches_recorded = recorded.dump() == to_json(out.verdict).dump();
    }
    return true;
}

}  // namespace stallscope::cli
