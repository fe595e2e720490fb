// Where the sources read from: the real /proc, /sys, /dev and NIC ioctls, or a fixture tree.
// The one seam for every filesystem-backed external (ARCHITECTURE.md "one seam and one fake").
#pragma once

#include <string>

namespace stallscope {

struct Roots {
    std::string procfs = "/proc";
    std::string sysfs = "/sys";
    std::string dev = "/dev";
    std::string ethtool;  // empty: SIOCETHTOOL ioctl on real interfaces; else dir of `ethtool -S` text files
    std::string nvml_library = "libnvidia-ml.so.1";
    std::string nvidia_smi = "nvidia-smi";  // fallback when NVML cannot load; looked up on PATH
    bool fixture_mode() const { return procfs != "/proc" || sysfs != "/sys"; }
};

// Reads STALLSCOPE_PROCFS_ROOT, STALLSCOPE_SYSFS_ROOT, STALLSCOPE_DEV_ROOT, STALLSCOPE_ETHTOOL_ROOT,
// STALLSCOPE_NVML_LIBRARY, STALLSCOPE_NVIDIA_SMI (MONITORING_PROCFS_ROOT / MONITORING_SYSFS_ROOT are the
// seed's aliases). Uses secure_getenv, so a set-uid/set-gid process ignores them. Root-run code (the SPANK
// plugin, the epilog) must not call this at all: it uses Roots{} (see ARCHITECTURE.md, Security).
Roots roots_from_environment();

}  // namespace stallscope
