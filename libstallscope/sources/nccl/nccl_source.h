// The NCCL/RCCL source: RAS (STATUS polls from node 0 + MONITOR events), Inspector JSONL tail, and the
// NCCL/PyTorch log scan, composed into Snapshot::nccl. Nothing here blocks the sampler: the RAS query
// runs on a worker (std::async) whose every socket operation is bounded, and is collected by a later
// sample; files are read with a byte budget per sample.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "libstallscope/sources/nccl/ras_client.h"
#include "libstallscope/sources/source.h"

namespace stallscope::nccl {

struct NcclSourceConfig {
    // auto: STATUS polls (version-gated) + MONITOR; poll: STATUS only; monitor: MONITOR only; off.
    std::string ras_mode = "auto";
    bool ras_any_node = false;  // poll on every node, not only SLURM_NODEID 0 (tests, single-node CLI)
    RasEndpoint endpoint;
    RasLimits limits;
    int ras_timeout_seconds = 5;
    double ras_interval_seconds = 60;     // >= 30 s in production: each STATUS runs a job-wide RAS collective
    double ras_start_delay_seconds = 60;  // no STATUS during communicator init (NVIDIA/nccl#1669)
    std::string inspector_dir;            // "" = no Inspector
    std::vector<std::string> log_globs;   // STALLSCOPE_NCCL_LOGS + NCCL_DEBUG_FILE as a glob
};

// Environment: STALLSCOPE_NCCL_RAS (auto|poll|monitor|off), NCCL_RAS_ADDR, NCCL_RAS_ENABLE=0 (-> off),
// STALLSCOPE_NCCL_RAS_INTERVAL (seconds, >= 30), STALLSCOPE_NCCL_RAS_DELAY, NCCL_INSPECTOR_DUMP_DIR
// (else nccl-inspector-<SLURM_JOB_ID> when it exists in the working directory), STALLSCOPE_NCCL_LOGS,
// NCCL_DEBUG_FILE.
NcclSourceConfig nccl_config_from_environment(const std::string& host);

std::unique_ptr<Source> make_nccl_source(NcclSourceConfig config);

// Which STATUS cadence a server version allows (research notes 1.7): 0 = none (MONITOR only),
// otherwise a multiplier of the configured interval. 2.26.0-2.29.1 crash under repeated polling.
double status_interval_factor(int version_code);

}  // namespace stallscope::nccl
