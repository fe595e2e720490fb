// `stallscope compare A B`: two jobs (or two recordings of one job's steps) side by side. First whether B
// is slower, from what was measured (compare_speed.h); then why: the reason that fired only in B, or the
// metric that moved most against B - never a gap in the data (recording_incomplete, telemetry_missing:
// they say what is not known, not what is slow). Both are aligned by their start; every metric is a mean
// over the recording, so jobs of different length compare; the delta is B - A.
#pragma once

#include <string>
#include <vector>

#include "libstallscope/job/compare_speed.h"
#include "libstallscope/job/job_report.h"
#include "libstallscope/job/job_series.h"

namespace stallscope {

struct MetricDelta {
    std::string key, title, unit;
    double a = 0, b = 0;
    bool a_measured = false, b_measured = false;
    // -1: lower is worse (utilization), +1: higher is worse (pressure, loss), 0: neither (RDMA bytes follow
    // the work and the node: a node without RDMA ports moves none and is not slower for it).
    int worse_when = -1;
    double delta() const { return b - a; }
    double relative() const;  // (b - a) / |a|, 0 when a is 0
    // How much worse B is, in relative terms (0 when better or unchanged, or not measured in both).
    double badness() const;
};

struct JobSide {
    std::string input;  // as given
    JobReport report;
    JobSeries series;    // aligned: both sides use the same bucket length
    BusBandwidth busbw;  // the series' NCCL bus bandwidth, every host together
};

struct Comparison {
    JobSide a, b;
    std::vector<MetricDelta> metrics;
    std::vector<std::string> reasons_only_a, reasons_only_b, reasons_both;  // reason codes
    SpeedMeasure speed;
    std::string because;   // one line: "B is slower than A because ...", "B is as fast as A", ...
    std::string evidence;  // what backs it: the reason's share, the metric that moved
};

// Both reports must have nodes. Replays both once more for the aligned series.
Comparison compare_jobs(JobSide a, JobSide b);
// `compare --json`; the text and the HTML page are the CLI's (helper/compare_view.h).
Json comparison_json(const Comparison& c);

// A metric must move by 10 % (relative) to be named as the cause, or marked in a view.
inline constexpr double kNoticeableChange = 0.10;
// A figure as the comparison's sentences and table write it: no decimals from 100 up or when whole, else one.
std::string compare_number_text(double v);

}  // namespace stallscope
