// The environment that points the stallscope binary at one fixture node (tests/cli): its /proc, /sys,
// ethtool and /dev trees and the fake libnvidia-ml fed from its nvml.json, outside any Slurm job.
#pragma once

#include <string>
#include <vector>

namespace stallscope::test {

inline std::vector<std::string> fixture_node_env(const std::string& node) {
    const std::string root = std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/" + node;
    return {"STALLSCOPE_PROCFS_ROOT=" + root + "/proc",
            "STALLSCOPE_SYSFS_ROOT=" + root + "/sys",
            "STALLSCOPE_ETHTOOL_ROOT=" + root + "/ethtool",
            "STALLSCOPE_DEV_ROOT=" + root + "/dev",
            "STALLSCOPE_NVML_LIBRARY=" FAKE_NVML_PATH,
            "STALLSCOPE_FAKE_NVML_FIXTURE=" + root + "/nvml.json",
            "STALLSCOPE_NVIDIA_SMI=/nonexistent/nvidia-smi",
            "SLURM_JOB_ID=",
            "SLURM_STEP_GPUS=",
            "SLURM_JOB_GPUS="};
}

}  // namespace stallscope::test
