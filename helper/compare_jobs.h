// `stallscope compare A B`: two jobs (or two recordings of one job's steps) side by side. Both are
// aligned by their step start; every metric is a mean over the recording, so jobs of different length
// compare; the delta is B - A. The "why" names the reason or metric that moved most against B.
#pragma once

#include <string>
#include <vector>

#include "helper/html_report_series.h"
#include "helper/job_report.h"

namespace stallscope::cli {

struct MetricDelta {
    std::string key, title, unit;
    double a = 0, b = 0;
    bool a_measured = false, b_measured = false;
    int worse_when = -1;  // -1: lower is worse (utilization), +1: higher is worse (pressure, loss)
    double delta() const { return b - a; }
    double relative() const;  // (b - a) / |a|, 0 when a is 0
    // How much worse B is, in relative terms (0 when better or unchanged, or not measured in both).
    double badness() const;
};

struct JobSide {
    std::string input;  // as given
    JobReport report;
    JobSeries series;  // aligned: both sides use the same bucket length
};

struct Comparison {
    JobSide a, b;
    std::vector<MetricDelta> metrics;
    std::vector<std::string> reasons_only_a, reasons_only_b, reasons_both;  // reason codes
    std::string because;  // one line: "B is slower because ..."
    std::string evidence;
};

// Both reports must have nodes. Replays both once more for the aligned series.
Comparison compare_jobs(JobSide a, JobSide b);
Json comparison_json(const Comparison& c);
std::string comparison_text(const Comparison& c);
std::string comparison_html(const Comparison& c);

}  // namespace stallscope::cli
