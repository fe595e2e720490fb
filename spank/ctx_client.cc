// srun (S_CTX_LOCAL) and sbatch/salloc (S_CTX_ALLOCATOR): register --stallscope and reject bad values
// before anything is submitted. The value reaches slurmstepd through Slurm's own option forwarding;
// STALLSCOPE=SECONDS reaches it through the job environment (srun/sbatch export the caller's env by
// default; with --export=NONE it is not seen remotely, use the option then).
#include <cstdlib>

#include "spank/option.h"
#include "spank/plugin.h"

namespace stallscope::spank {

namespace {
PluginConfig g_client_config = default_config();
}

int client_init(spank_t sp, int ac, char** av) {
    g_client_config = load_config(ac, av);
    return register_option(sp, g_client_config);
}

int client_init_post_opt(spank_t) {
    // The option (command line or SLURM_SPANK_* env) was validated by its callback; the friendly
    // variable is validated here so a typo fails at submission, not silently at run time.
    if (option_seen().seen) return 0;
    const char* value = std::getenv("STALLSCOPE");
    if (value == nullptr || *value == '\0') return 0;
    IntervalChoice choice = parse_interval(value, g_client_config, "STALLSCOPE");
    if (choice.seconds) return 0;
    slurm_error("stallscope: %s", choice.error.c_str());
    return -1;
}

}  // namespace stallscope::spank
