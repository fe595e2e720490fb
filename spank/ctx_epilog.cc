// `slurmstepd spank epilog` (S_CTX_JOB_SCRIPT, root, after every step of the job left this node):
// on the job's writer node only, run `stallscope summarize <dir>` as the job user (bounded, one deadline
// for the whole hook) when the writer helper did not leave a fresh summary (job cancelled, time limit,
// helper killed); then remove the job's run-dir state on every node. Only root-owned state from
// run_dir decides what runs; the user's directory is only stat()ed, never written as root.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "spank/helper_spec.h"
#include "spank/job_writer.h"
#include "spank/plugin.h"
#include "spank/process.h"
#include "spank/state.h"

namespace stallscope::spank {

namespace {

long now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

bool newer(const timespec& a, const timespec& b) {
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

// Does `dir` hold a verdict.* newer than summary.json (or a verdict and no summary)? Read as root with
// O_NOFOLLOW/AT_SYMLINK_NOFOLLOW, metadata only: the answer only decides whether the user's own
// summarize runs.
bool summary_stale(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false;
    DIR* d = ::fdopendir(fd);
    if (!d) {
        ::close(fd);
        return false;
    }
    struct stat summary {};
    const bool have_summary = ::fstatat(fd, "summary.json", &summary, AT_SYMLINK_NOFOLLOW) == 0;
    bool stale = false;
    int seen = 0;
    while (const dirent* e = ::readdir(d)) {
        if (++seen > 100000) break;  // bounded: a job dir has one verdict per step per node
        const std::string name = e->d_name;
        if (name.rfind("verdict.", 0) != 0 && name.rfind("timeline.", 0) != 0) continue;
        struct stat st {};
        if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (!have_summary || newer(st.st_mtim, summary.st_mtim)) {
            stale = true;
            break;
        }
    }
    ::closedir(d);
    return stale;
}

void summarize(const PluginConfig& config, const std::string& job_id, const JobState& state,
               const std::string& dir, unsigned timeout_s) {
    Credentials user{state.uid, state.gid, state.groups};
    if (user.groups.empty()) user.groups.push_back(user.gid);
    std::vector<std::string> env = {"PATH=" + std::string(kHelperPath), "SLURM_JOB_ID=" + job_id};
    CommandResult r = run_command(summarize_argv(config, dir), env, user, timeout_s);
    if (!r.started)
        slurm_error("stallscope: job %s: cannot run %s summarize: %s", job_id.c_str(), config.helper.c_str(),
                    r.error.c_str());
    else if (r.timed_out)
        slurm_error("stallscope: job %s: %s summarize %s killed at the epilog_timeout=%us deadline",
                    job_id.c_str(), config.helper.c_str(), dir.c_str(), config.epilog_timeout);
    else if (r.exit_code != 0)
        slurm_error("stallscope: job %s: %s summarize %s exited with %d: %s", job_id.c_str(),
                    config.helper.c_str(), dir.c_str(), r.exit_code,
                    r.output.substr(0, r.output.find('\n')).substr(0, 300).c_str());
    else
        slurm_info("stallscope: job %s: epilog summarized %s", job_id.c_str(), dir.c_str());
}

void summarize_if_stale(const PluginConfig& config, const std::string& job_id, const JobState& state,
                        const std::string& dir, long deadline) {
    if (!summary_stale(dir)) {
        slurm_verbose("stallscope: job %s: %s/summary.json is current; not summarizing", job_id.c_str(),
                      dir.c_str());
        return;
    }
    const long left = deadline - now_s();
    if (left <= 0) {
        slurm_error("stallscope: job %s: epilog_timeout=%us spent; not summarizing %s", job_id.c_str(),
                    config.epilog_timeout, dir.c_str());
        return;
    }
    summarize(config, job_id, state, dir, static_cast<unsigned>(left));
}

}  // namespace

int epilog_job_epilog(spank_t sp, int ac, char** av) {
    PluginConfig config = load_config(ac, av);
    const long deadline = now_s() + config.epilog_timeout;  // one deadline for the whole hook
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
    std::string ignored;
    const bool writer_node = read_root_file(writer_mark_path(config.run_dir, job_id), &ignored).has_value();
    if (!state || state->uid != uid) {
        slurm_error("stallscope: job %s: malformed state file %s; not summarizing", job_id.c_str(),
                    state_path(config.run_dir, job_id).c_str());
    } else if (writer_node) {
        // Every output directory a step of this job used (output_dir=cwd with srun --chdir differs).
        const std::vector<std::string> dirs = all_out_dirs(*state);
        for (const std::string& dir : dirs) summarize_if_stale(config, job_id, *state, dir, deadline);
        std::optional<std::string> fallback = read_root_file(result_path(config.run_dir, job_id), &err);
        if (fallback && std::find(dirs.begin(), dirs.end(), *fallback) == dirs.end()) {
            if (accepted_fallback_dir(*fallback, state->uid, state->out_dir))
                summarize_if_stale(config, job_id, *state, *fallback, deadline);
            else if (!fallback->empty())
                slurm_error(
                    "stallscope: job %s: not summarizing %s: not the helper's fallback form "
                    "<tmp>/stallscope-%u/<leaf of %s>",
                    job_id.c_str(), fallback->c_str(), state->uid, state->out_dir.c_str());
        }
    }
    // <run_dir>/<jobid>/ held the user-owned sampler lock in older versions: remove a leftover.
    err = remove_tree(job_run_dir(config, job_id));
    if (!err.empty()) slurm_error("stallscope: job %s: %s", job_id.c_str(), err.c_str());
    for (const std::string& path :
         {state_path(config.run_dir, job_id), result_path(config.run_dir, job_id),
          comment_mark_path(config.run_dir, job_id), lock_path(config.run_dir, job_id),
          batch_mark_path(config.run_dir, job_id), writer_mark_path(config.run_dir, job_id)})
        unlink(path.c_str());
    return 0;
}

}  // namespace stallscope::spank
