// NCCL / PyTorch environment help (pure, no SPANK symbols; compiled into the plugin and tests/spank):
// which variables the plugin adds to a recording step's environment so NCCL RAS, NCCL logs, the NCCL
// Inspector and the PyTorch flight recorder write where `stallscope record` looks, and what the helper
// is told. Values the user set always win; nothing here creates a file or directory (NCCL, PyTorch
// and the helper create them as the user). Background: research/nccl-rccl-observability.md §1.1.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spank/config.h"

namespace stallscope::spank {

struct NcclEnvPlan {
    bool enabled = false;
    std::vector<std::pair<std::string, std::string>> set;  // in order; none of them is in the job env
    std::string note;  // "" or one line for the slurmd log (e.g. a bad STALLSCOPE_NCCL_ENV value)
};

// Is the help on for this job? STALLSCOPE_NCCL_ENV=1|0 in the job env wins over plugstack nccl_env;
// any other value is ignored (note says so).
bool nccl_env_enabled(const PluginConfig& config, const std::vector<std::string>& job_env, std::string* note);

// The job's RAS port: first + job_id % (last - first + 1). Per job, not per step: every step of a
// job on a node reaches the one sampler (per-node lock) that the winning step's helper runs, and
// srun inside a batch script inherits the batch step's value anyway.
unsigned nccl_ras_port(const PluginConfig& config, std::uint32_t job_id);

// What to set for a recording step: job_env are "NAME=value" strings, out_dir the job's stallscope
// directory. Empty plan when the help is off.
NcclEnvPlan plan_nccl_env(const PluginConfig& config, const std::vector<std::string>& job_env,
                          std::uint32_t job_id, std::string_view out_dir);

// NCCL_DEBUG_FILE pattern -> glob: %h -> host (NCCL writes the host name up to its first '.'; the
// glob's ".*" after it also matches a full name), %p and other conversions -> *, %% -> %. Relative
// patterns are made absolute against cwd.
std::string nccl_debug_glob(std::string_view pattern, std::string_view host, std::string_view cwd);

// Final touches to the helper environment (helper_env already copied the NCCL names it reads):
// relative NCCL_DEBUG_FILE / NCCL_INSPECTOR_DUMP_DIR become absolute against the job's cwd (the
// helper runs in /), and STALLSCOPE_NCCL_LOGS, when unset, becomes the glob of NCCL_DEBUG_FILE.
void add_helper_nccl_env(std::vector<std::string>& helper_env, std::string_view host, std::string_view cwd);

// Value of NAME in "NAME=value" strings (first occurrence); false if absent.
bool find_env(const std::vector<std::string>& env, std::string_view name, std::string* value);

}  // namespace stallscope::spank
