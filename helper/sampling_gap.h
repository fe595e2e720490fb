// A sample that came much later than planned: the helper was stopped (SIGSTOP, a debugger), frozen (cgroup
// freezer, VM pause) or starved of CPU. No verdict can speak for that time, so the gap becomes an event
// line in the timeline and a warning in the verdict document.
#pragma once

#include <string>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope::cli {

// True when `seconds_since_last` exceeds max(2 x planned, planned + 5 s): scheduling jitter and a slow
// collector (bounded by its deadline) stay below that.
bool is_sampling_gap(double seconds_since_last, double planned_interval);

// `from_unix`: the last sample before the gap. `until_stop`: the gap ran up to the stop (no sample after).
Json sampling_gap_event(double from_unix, double seconds, bool until_stop);
std::string sampling_gap_warning(double from_unix, double seconds, bool until_stop);

}  // namespace stallscope::cli
