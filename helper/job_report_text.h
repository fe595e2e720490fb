// A built job report (libstallscope/job/job_report.h) as text: what `stallscope report` prints and the job's
// summary.txt (job_finish.h takes it as its JobSummaryText).
#pragma once

#include <cstddef>
#include <string>

#include "libstallscope/job/job_report.h"

namespace stallscope::cli {

struct ReportView {
    bool all = false;            // every node, reason, GPU and port, ungrouped
    std::string node;            // one host in full detail
    std::size_t top_nodes = 10;  // worst/outlier node rows in the default view
};
// Default: fits a screen at any job size (grouped reasons, utilization distribution, top nodes).
std::string job_report_text(const JobReport& report, const ReportView& view = {});

// summary.txt: the default view.
inline std::string job_summary_text(const JobReport& report) {
    return job_report_text(report);
}

}  // namespace stallscope::cli
