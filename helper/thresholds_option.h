#pragma once

#include <optional>
#include <string>

#include "libstallscope/rules/thresholds.h"

namespace stallscope::cli {

// --rules FILE -> Thresholds (defaults when absent); a bad file is a usage error naming file:line.
Thresholds thresholds_from_option(const std::optional<std::string>& path);

}  // namespace stallscope::cli
