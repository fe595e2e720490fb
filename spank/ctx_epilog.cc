// `slurmstepd spank epilog` (S_CTX_JOB_SCRIPT, root, after every step of the job left this node):
// if stallscope ran here, run `stallscope summarize <dir>` as the job user (bounded), then remove the
// job's run-dir state. Only root-owned state from run_dir is read; nothing user-controlled.
#include <unistd.h>

#include <string>
#include <vector>

#include "spank/helper_spec.h"
#include "spank/plugin.h"
#include "spank/process.h"
#include "spank/state.h"

namespace stallscope::spank {

namespace {

void summarize(const PluginConfig& config, const std::string& job_id, const JobState& state,
               const std::string& dir) {
    Credentials user{state.uid, state.gid, state.groups};
    if (user.groups.empty()) user.groups.push_back(user.gid);
    std::vector<std::string> env = {"PATH=" + std::string(kHelperPath), "SLURM_JOB_ID=" + job_id};
    CommandResult r = run_command(summarize_argv(config, dir), env, user, config.epilog_timeout);
    if (!r.started)
        slurm_error("stallscope: job %s: cannot run %s summarize: %s", job_id.c_str(), config.helper.c_str(),
                    r.error.c_str());
    else if (r.timed_out)
        slurm_error("stallscope: job %s: %s summarize %s killed after epilog_timeout=%us", job_id.c_str(),
                    config.helper.c_str(), dir.c_str(), config.epilog_timeout);
    else if (r.exit_code != 0)
        slurm_error("stallscope: job %s: %s summarize %s exited with %d: %s", job_id.c_str(),
                    config.helper.c_str(), dir.c_str(), r.exit_code,
                    r.output.substr(0, r.output.find('\n')).substr(0, 300).c_str());
    else
        slurm_verbose("stallscope: job %s: summarized %s", job_id.c_str(), dir.c_str());
}

}  // namespace

int epilog_job_epilog(spank_t sp, int ac, char** av) {
    PluginConfig config = load_config(ac, av);
    uint32_t job = 0;
    uid_t uid = 0;
    spank_err_t rc = spank_get_item(sp, S_JOB_ID, &job);
    if (rc == ESPANK_SUCCESS) rc = spank_get_item(sp, S_JOB_UID, &uid);
    if (rc != ESPANK_SUCCESS) {
        slurm_error("stallscope: epilog: cannot read the job id/uid: %s", spank_strerror(rc));
        return 0;
    }
    std::string job_id = std::to_string(job);
    std::string err;
    std::optional<std::string> text = read_root_file(state_path(config.run_dir, job_id), &err);
    if (!text) {
        if (!err.empty()) slurm_error("stallscope: job %s: %s", job_id.c_str(), err.c_str());
        return 0;  // stallscope was not used for this job on this node
    }
    std::optional<JobState> state = parse_state(*text);
    if (!state || state->uid != uid) {
        slurm_error("stallscope: job %s: malformed state file %s; not summarizing", job_id.c_str(),
                    state_path(config.run_dir, job_id).c_str());
    } else {
        summarize(config, job_id, *state, state->out_dir);
        std::optional<std::string> fallback = read_root_file(result_path(config.run_dir, job_id), &err);
        if (fallback && !fallback->empty() && fallback->front() == '/' && *fallback != state->out_dir)
            summarize(config, job_id, *state, *fallback);
    }
    err = remove_tree(job_run_dir(config, job_id));
    if (!err.empty()) slurm_error("stallscope: job %s: %s", job_id.c_str(), err.c_str());
    unlink(state_path(config.run_dir, job_id).c_str());
    unlink(result_path(config.run_dir, job_id).c_str());
    unlink(comment_mark_path(config.run_dir, job_id).c_str());
    return 0;
}

}  // namespace stallscope::spank
