// Whether B ran slower than A, from what was measured, before anything tries to explain why (`compare`).
// A verdict label or a metric that moved is not a measure of speed: a FAST run on a node without RDMA
// ports moves no RDMA bytes and is not slower for it. The measures, most direct first:
//   1. NCCL's own bus bandwidth (Inspector records of the same collective and message size in both jobs);
//   2. the durations of the steps both jobs ran (same step ids; else each job's only step), which compare
//      runs of the same work (the usual question: "yesterday's run of this script was faster").
// A step still running, or whose helper died, has no final duration: its length is a lower bound, used
// only where a bound decides (B's unfinished step already longer than A's finished one).
#pragma once

#include <string>

#include "libstallscope/job/job_report.h"
#include "libstallscope/job/job_series.h"

namespace stallscope {

enum class Speed { slower, faster, same, unknown };  // B against A
const char* speed_name(Speed s);

struct SpeedMeasure {
    Speed speed = Speed::unknown;
    std::string basis;    // "nccl_busbw" | "step_durations" | "" (nothing comparable)
    double a = 0, b = 0;  // the measure in A and B (seconds, or GB/s)
    std::string unit;     // "s" | "GB/s"
    double relative = 0;  // (b - a) / a
    std::string detail;   // one sentence: what was compared, or why nothing could be
};

SpeedMeasure measure_speed(const JobReport& a, const JobReport& b, const BusBandwidth& busbw_a,
                           const BusBandwidth& busbw_b);

}  // namespace stallscope
