// What the plugin passes to `stallscope record` / `stallscope summarize` (pure): output directory,
// argv and the explicit minimal environment.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "spank/config.h"

namespace stallscope::spank {

inline constexpr int kLivenessFd = 3;  // the helper's end of the liveness/result pipe
inline constexpr std::string_view kHelperPath = "/usr/local/bin:/usr/bin:/bin";

inline constexpr uid_t kUnknownUid = static_cast<uid_t>(-1);

struct JobFacts {
    std::string job_id;
    std::string user;         // unused: SLURM_JOB_USER comes from the job env (user-controlled); see uid
    std::string submit_dir;   // SLURM_SUBMIT_DIR of the step env
    std::string cwd;          // PWD of the step env
    uid_t uid = kUnknownUid;  // the job's uid (S_JOB_UID): %u is its passwd name
};

// The passwd name of uid (getpwuid_r), its decimal form when it has none, "unknown-uid" for kUnknownUid.
// Never anything from the job's environment.
std::string user_name_for_uid(uid_t uid);

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
// NCCL_INSPECTOR_DUMP_DIR; see nccl_env.h), HOME/USER, and the user knobs STALLSCOPE_NCCL_*. PATH is
// fixed. Every other STALLSCOPE_* is a test seam (is_test_seam) and passes only with allow_test_env
// (plugstack allow_test_env=1): STALLSCOPE_NVML_LIBRARY or STALLSCOPE_NVIDIA_SMI make the helper run
// user-chosen code, the *_ROOT ones make it read user-chosen files as the node's truth.
bool helper_env_wanted(std::string_view name, bool allow_test_env = false);

// STALLSCOPE_* variables that only tests set (anything but the documented STALLSCOPE_NCCL_* knobs).
bool is_test_seam(std::string_view name);

// Builds the helper environment from `job_env` ("NAME=value" strings): wanted names only, first
// occurrence wins, PATH=kHelperPath always. Callers pass config.allow_test_env.
std::vector<std::string> helper_env(const std::vector<std::string>& job_env, bool allow_test_env = false);

}  // namespace stallscope::spank

namespace stallscope::spank {

// Sets NAME=value in env, replacing an existing entry.
void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value);

}  // namespace stallscope::spank
