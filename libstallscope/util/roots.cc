#include "libstallscope/util/roots.h"

#include <cstdlib>

namespace stallscope {
namespace {

const char* env(const char* name, const char* alias = nullptr) {
    const char* v = ::secure_getenv(name);
    if ((!v || !*v) && alias) v = ::secure_getenv(alias);
    return (v && *v) ? v : nullptr;
}

}  // namespace

Roots roots_from_environment() {
    Roots r;
    if (auto v = env("STALLSCOPE_PROCFS_ROOT", "MONITORING_PROCFS_ROOT")) r.procfs = v;
    if (auto v = env("STALLSCOPE_SYSFS_ROOT", "MONITORING_SYSFS_ROOT")) r.sysfs = v;
    if (auto v = env("STALLSCOPE_DEV_ROOT")) r.dev = v;
    if (auto v = env("STALLSCOPE_ETHTOOL_ROOT")) r.ethtool = v;
    if (auto v = env("STALLSCOPE_NVML_LIBRARY")) r.nvml_library = v;
    if (auto v = env("STALLSCOPE_NVIDIA_SMI")) r.nvidia_smi = v;
    return r;
}

}  // namespace stallscope
