// Job context from environment variables: pure functions on an environment map. No I/O.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

using Environment = std::map<std::string, std::string, std::less<>>;

// The variables the context source looks at (everything else in an environment is dropped on read, so
// a /proc/<pid>/environ scan keeps no secrets in memory).
bool is_context_variable(std::string_view name);

// /proc/<pid>/environ: NUL-separated NAME=value entries; keeps only is_context_variable() names.
Environment parse_environ(std::string_view text);

// "0,1, 2,,3" -> {"0","1","2","3"}: entries trimmed, empty ones dropped.
std::vector<std::string> split_list(std::string_view text);

// Slurm context from an environment: SLURM_JOB_ID (else SLURM_JOBID), SLURM_STEP_ID (else SLURM_STEPID),
// SLURM_JOB_NAME, SLURM_JOB_USER (else USER), SLURM_JOB_NODELIST (else SLURM_NODELIST), SLURM_NODEID,
// gpus from SLURM_STEP_GPUS else SLURM_JOB_GPUS, visible_devices from CUDA_VISIBLE_DEVICES else
// ROCR_VISIBLE_DEVICES. scheduler is "slurm" when a job id is present, else "none" (user still filled).
JobContext slurm_context_from_environment(const Environment& env);

}  // namespace stallscope
