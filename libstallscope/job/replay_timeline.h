// Re-profiles one recorded timeline: the same Profiler the helper ran live, fed the same snapshots, one
// at a time as they are read (constant memory: a 30-day recording at 1 s is millions of samples).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "libstallscope/model/profile.h"
#include "libstallscope/rules/thresholds.h"
#include "libstallscope/timeline/timeline.h"

namespace stallscope {

struct ReplayResult {
    Json header;            // null when the file has none (plain `--json` output)
    Json recorded_verdict;  // null when the helper did not finish cleanly
    std::vector<std::string> warnings;
    std::size_t samples = 0;
    std::optional<Snapshot> first_sample;  // host and job context when the header lacks them
    StepVerdict verdict;
    // null when the timeline has no verdict line (helper killed); else whether the replayed verdict's JSON
    // equals the recorded one byte for byte.
    std::optional<bool> matches_recorded;
};

// Called with every sample after the profiler saw it, with the profiler's rates since the previous sample
// (nullptr for the first): report statistics ride on the same single pass, without computing them again.
using SampleObserver = std::function<void(const Snapshot&, const Rates*)>;

// Thresholds: `override_thresholds` when given (--rules), else those recorded in the timeline header
// (so a recording replays to its own verdict even after defaults changed), else the defaults.
// `progress` prints a running sample count to stderr (only when stderr is a terminal); `progress_bytes`,
// when given, is advanced by the bytes read (a caller's progress bar over many files, from any thread).
// "-" is standard input. A file that is not a timeline is an error ("not a stallscope timeline").
bool replay_timeline(const std::string& path, const std::optional<Thresholds>& override_thresholds,
                     bool progress, ReplayResult& out, std::string& error,
                     const SampleObserver& observer = {},
                     std::atomic<std::uint64_t>* progress_bytes = nullptr);

// The thresholds recorded in a timeline header, if any parse.
std::optional<Thresholds> thresholds_from_header(const Json& header, std::string& error);

}  // namespace stallscope
