// Re-profiles one recorded timeline: the same Profiler the helper ran live, fed the same snapshots.
#pragma once

#include <optional>
#include <string>

#include "libstallscope/model/profile.h"
#include "libstallscope/rules/thresholds.h"
#include "libstallscope/timeline/timeline.h"

namespace stallscope::cli {

struct ReplayResult {
    TimelineContents contents;
    StepVerdict verdict;
    // null when the timeline has no verdict line (helper killed); else whether the replayed verdict's JSON
    // equals the recorded one byte for byte.
    std::optional<bool> matches_recorded;
};

// Thresholds: `override_thresholds` when given (--rules), else those recorded in the timeline header
// (so a recording replays to its own verdict even after defaults changed), else the defaults.
// `progress` prints a running sample count to stderr (only when stderr is a terminal).
bool replay_timeline(const std::string& path, const std::optional<Thresholds>& override_thresholds,
                     bool progress, ReplayResult& out, std::string& error);

// The thresholds recorded in a timeline header, if any parse.
std::optional<Thresholds> thresholds_from_header(const Json& header, std::string& error);

}  // namespace stallscope::cli
