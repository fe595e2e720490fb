#include "helper/thresholds_option.h"

#include "helper/cli_args.h"

namespace stallscope::cli {

Thresholds thresholds_from_option(const std::optional<std::string>& path) {
    if (!path) return Thresholds{};
    std::string error;
    auto t = load_thresholds(*path, error);
    if (!t) throw UsageError("--rules: " + error);
    return *t;
}

}  // namespace stallscope::cli
