// `stallscope html DIR|TIMELINE... -o FILE` and the page behind `report --html FILE`: the JobReport as
// one self-contained HTML file (inline SVG, a few lines of inline script for sorting; nothing fetched).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/job/job_report.h"
#include "libstallscope/job/job_series.h"

namespace stallscope::cli {

// The page's <body> parts, reused by `compare --html`.
std::string html_report_body(const JobReport& report, const JobSeries& series);
// The whole page; the report's JSON (job_report_json) rides along in <script id=report-json>.
std::string html_report_page(const JobReport& report, const JobSeries& series);

// Replays `report`'s timelines once more for the time series (on every core; `progress` as in
// collect_job_series) and writes the page atomically. `inputs` (what the user named) go into the page's
// footer. False with `error` set on failure.
bool write_html_report(const JobReport& report, const std::vector<std::string>& inputs,
                       const std::string& path, std::string& error, const SeriesProgress& progress = {});

// JSON for embedding inside <script>: no "</script>" or "<!--" can close or confuse the element.
std::string json_for_script(const Json& value);
// The same for JSON text already written compactly (write_job_report_json with indent -1).
std::string json_text_for_script(std::string_view text);

}  // namespace stallscope::cli
