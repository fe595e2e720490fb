#include "helper/thresholds_option.h"

#include <sys/stat.h>

#include "helper/cli_args.h"

namespace stallscope::cli {

Thresholds thresholds_from_option(const std::optional<std::string>& path) {
    if (!path) return Thresholds{};
    // A directory "reads" as an empty file on some paths: reject it rather than run on the defaults.
    struct stat st {};
    if (::stat(path->c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw UsageError("--rules: " + *path + " is a directory, not a thresholds file");
    std::string error;
    auto t = load_thresholds(*path, error);
    if (!t) throw UsageError("--rules: " + error);
    return *t;
}

}  // namespace stallscope::cli
