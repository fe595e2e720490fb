// `stallscope compare`'s renderings of a Comparison (libstallscope/job/compare_jobs.h): the terminal text
// and the HTML page. The comparison itself and its JSON are the library's.
#pragma once

#include <string>

#include "libstallscope/job/compare_jobs.h"

namespace stallscope::cli {

std::string comparison_text(const Comparison& c);
std::string comparison_html(const Comparison& c);

}  // namespace stallscope::cli
