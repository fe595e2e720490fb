// What the plugin passes to `stallscope record` / `stallscope summarize` (pure): output directory,
// argv and the explicit minimal environment.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "spank/config.h"

namespace stallscope::spank {

inline constexpr int kLivenessFd = 3;  // the helper's end of the liveness/result pipe
inline constexpr std::string_view kHelperPath = "/usr/local/bin:/usr/bin:/bin";

struct JobFacts {
    std::string job_id;
    std::string user;
    std::string submit_dir;  // SLURM_SUBMIT_DIR of the step env
    std::string cwd;         // PWD of the step env
};

// Output directory per plugstack `output_dir=` (see config.h). Falls back to the other of
// submit/cwd, then to /tmp, when the chosen one is not an absolute path. The helper creates it as the
// user and falls back to a tmp dir itself when it cannot write there.
std::string resolve_output_dir(const PluginConfig& config, const JobFacts& job);

// <run_dir>/<jobid>
std::string job_run_dir(const PluginConfig& config, std::string_view job_id);

std::vector<std::string> record_argv(const PluginConfig& config, std::string_view out_dir, unsigned interval,
                                     std::string_view job_id);
std::vector<std::string> summarize_argv(const PluginConfig& config, std::string_view dir);

// Variables copied from the job environment into the helper's: the Slurm/GPU context it records,
// the NCCL variables its NCCL source reads (NCCL_RAS_ADDR, NCCL_RAS_ENABLE, NCCL_DEBUG_FILE,
// NCCL_INSPECTOR_DUMP_DIR; see nccl_env.h), HOME/USER, and every STALLSCOPE_* (the helper runs as the user,
// so user-set values only affect the user's own helper; the tests point STALLSCOPE_NVML_LIBRARY at a fake
// NVML). PATH is fixed.
bool helper_env_wanted(std::string_view name);

// Builds the helper environment from `job_env` ("NAME=value" strings): wanted names only, first
// occurrence wins, PATH=kHelperPath always.
std::vector<std::string> helper_env(const std::vector<std::string>& job_env);

}  // namespace stallscope::spank

namespace stallscope::spank {

// Sets NAME=value in env, replacing an existing entry.
void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value);

}  // namespace stallscope::spank
