// Runs a source that calls into a driver (NVML can block for minutes on a GPU that fell off the bus)
// on its own thread with a deadline. A call that overruns is recorded in collector_failures (a telemetry
// reason: UNKNOWN, never a false FAST) and the sample goes on without it; while that call stays stuck the
// source is skipped, and when it returns, its stale result is dropped and normal sampling resumes.
#pragma once

#include <memory>

#include "libstallscope/sources/source.h"

namespace stallscope {

std::unique_ptr<Source> with_deadline(std::unique_ptr<Source> inner, double deadline_seconds);

}  // namespace stallscope
