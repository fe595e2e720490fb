// `slurmstepd spank epilog` (S_CTX_JOB_SCRIPT, root, after every step of the job left this node): the
// SPANK side of spank/epilog.h (job id and uid from SPANK items, messages to slurmd's log).
#include "spank/epilog.h"
#include "spank/plugin.h"

namespace stallscope::spank {

int epilog_job_epilog(spank_t sp, int ac, char** av) {
    const PluginConfig config = load_config(ac, av);
    uint32_t job = 0;
    uid_t uid = 0;
    spank_err_t rc = spank_get_item(sp, S_JOB_ID, &job);
    if (rc == ESPANK_SUCCESS) rc = spank_get_item(sp, S_JOB_UID, &uid);
    if (rc != ESPANK_SUCCESS) {
        slurm_error("stallscope: epilog: cannot read the job id/uid: %s", spank_strerror(rc));
        return 0;
    }
    // Messages are composed with every job-controlled string escaped (escape.h shown()); "%s" keeps a
    // '%' in them from being read as a format.
    const EpilogLog log{[](const std::string& m) { slurm_error("%s", m.c_str()); },
                        [](const std::string& m) { slurm_info("%s", m.c_str()); },
                        [](const std::string& m) { slurm_verbose("%s", m.c_str()); }};
    run_job_epilog(config, std::to_string(job), uid, log);
    return 0;
}

}  // namespace stallscope::spank
