#include "helper/sampling_gap.h"

#include <algorithm>
#include <cmath>

namespace stallscope::cli {

bool is_sampling_gap(double seconds_since_last, double planned_interval) {
    return seconds_since_last > std::max(2 * planned_interval, planned_interval + 5);
}

Json sampling_gap_event(double from_unix, double seconds, bool until_stop) {
    return Json{{"type", "event"},
                {"time", format_rfc3339(from_unix + seconds)},
                {"kind", "sampling_gap"},
                {"from", format_rfc3339(from_unix)},
                {"seconds", std::round(seconds * 10) / 10},
                {"until_stop", until_stop}};
}

std::string sampling_gap_warning(double from_unix, double seconds, bool until_stop) {
    const std::string span = std::to_string(static_cast<long long>(std::llround(seconds))) + " s";
    return (until_stop ? "no sample in the last " + span + " before the stop (from "
                       : "no sample for " + span + " (from ") +
           format_rfc3339(from_unix) +
           "): the helper was stopped (SIGSTOP), frozen or starved of CPU; the verdict does not cover that "
           "time";
}

}  // namespace stallscope::cli
