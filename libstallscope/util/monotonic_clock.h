// CLOCK_MONOTONIC in seconds: deadlines and intervals that a wall-clock step (NTP, an admin's `date`)
// must not stretch or cut short. Here, not with the CLI's stop signals, because the job merge's wait for
// verdicts (job/job_finish.cc) needs the clock but not the signals.
#pragma once

#include <time.h>

namespace stallscope {

inline double monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace stallscope
