// srun (S_CTX_LOCAL) and sbatch/salloc (S_CTX_ALLOCATOR): register --stallscope and reject bad values
// before anything is submitted.
//
// STALLSCOPE=SECONDS is turned into the variable SPANK itself reads as the option
// (SLURM_SPANK__SLURM_SPANK_OPTION_stallscope_stallscope, plugstack.c spank_process_env_options, which
// runs after slurm_spank_init and before the command line). So the friendly variable goes through the
// same callback (bad values stop srun/sbatch, even though the plugin is `optional`: a failing
// init_post_opt of an optional plugin is only logged), the command line still wins, and the value
// reaches slurmstepd through Slurm's own option forwarding, also with --export=NONE.
#include <cstdlib>

#include "spank/plugin.h"

namespace stallscope::spank {

namespace {
constexpr const char* kSpankOptionEnv = "SLURM_SPANK__SLURM_SPANK_OPTION_stallscope_stallscope";
}

int client_init(spank_t sp, int ac, char** av) {
    PluginConfig config = load_config(ac, av);
    const char* friendly = std::getenv("STALLSCOPE");
    if (friendly != nullptr && *friendly != '\0' && std::getenv(kSpankOptionEnv) == nullptr) {
        setenv(kSpankOptionEnv, friendly, 0);
        note_friendly_env(friendly);
    }
    return register_option(sp, config);
}

int client_init_post_opt(spank_t) {
    return 0;
}

}  // namespace stallscope::spank
