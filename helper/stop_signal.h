// SIGTERM/SIGINT/SIGUSR1 -> a flag the sampling loops poll, and an interruptible sleep.
#pragma once

namespace stallscope::cli {

// Unblocks and installs handlers (slurmstepd starts its children with these signals blocked).
void install_stop_handlers();
bool stop_requested();
// Sleeps until the CLOCK_MONOTONIC time `deadline` (seconds, util/monotonic_clock.h) or until a stop
// signal arrives.
void sleep_until(double deadline);

}  // namespace stallscope::cli
