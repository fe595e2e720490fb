// Internal interface between the SPANK dispatcher (plugin.cc) and the per-context files. Everything
// here runs inside srun/sbatch/slurmstepd: hooks return 0 unless the user asked for something
// impossible, and no exception leaves plugin.cc.
#pragma once

#include <cstdint>
extern "C" {
#include <slurm/spank.h>
}

#include <optional>
#include <string>

#include "spank/comment_writer.h"
#include "spank/config.h"

namespace stallscope::spank {

// Parses plugstack.conf arguments and logs each problem ("stallscope: plugstack.conf argument ...").
PluginConfig load_config(int ac, char** av);

// Registers --stallscope[=SECONDS]; the callback validates (local/allocator: non-zero on a bad value)
// and records the value. Only valid in slurm_spank_init.
int register_option(spank_t sp, const PluginConfig& config);

// What the option callback saw in this process (remote callbacks may fire twice on 22.05: the last
// value wins, which is the same value).
struct OptionSeen {
    bool seen = false;
    std::optional<unsigned> interval;  // nullopt when the value was invalid
};
const OptionSeen& option_seen();
// client_init copied STALLSCOPE=value into SPANK's option variable (messages then name STALLSCOPE).
void note_friendly_env(const char* value);

// srun (local) and sbatch/salloc (allocator).
int client_init(spank_t sp, int ac, char** av);
int client_init_post_opt(spank_t sp);

// slurmstepd (remote).
int stepd_init(spank_t sp, int ac, char** av);
int stepd_init_post_opt(spank_t sp);
int stepd_user_init(spank_t sp);
int stepd_task_exit(spank_t sp);
int stepd_exit(spank_t sp);

// `slurmstepd spank epilog` (job_script).
int epilog_job_epilog(spank_t sp, int ac, char** av);

}  // namespace stallscope::spank
