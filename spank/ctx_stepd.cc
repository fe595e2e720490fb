// slurmstepd (S_CTX_REMOTE): decide, start the helper in user_init, stop it in the last task_exit,
// write the job comment in exit. Lifecycle and identities: research/spank-design.md §0, §1.3, §2.4-2.6.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "spank/comment.h"
#include "spank/escape.h"
#include "spank/flight_recorder_env.h"
#include "spank/helper_spec.h"
#include "spank/job_writer.h"
#include "spank/nccl_env.h"
#include "spank/option.h"
#include "spank/plugin.h"
#include "spank/process.h"
#include "spank/state.h"

namespace stallscope::spank {

namespace {

constexpr uint32_t kInteractiveStep = 0xfffffffa;  // slurm.h SLURM_INTERACTIVE_STEP
constexpr uint32_t kBatchStep = kBatchStepId;      // SLURM_BATCH_SCRIPT
constexpr uint32_t kExternStep = 0xfffffffc;       // SLURM_EXTERN_CONT

// One slurmstepd process = one step on one node, so plain statics are this step's state.
struct StepState {
    PluginConfig config = default_config();
    bool enabled = false;
    unsigned interval = 0;
    std::string job_id;
    std::string update_id;  // "<array id>_<task id>" for an array task, else job_id (scontrol update)
    uint32_t job_num = 0;
    uint32_t step_id = 0;
    uint32_t node_id = 0;
    uint32_t local_tasks = 0;
    uint32_t exited_tasks = 0;
    Credentials user;
    std::string out_dir;
    std::string cwd;  // PWD of the step env
    HelperProcess helper;
    std::string segment;      // sanitized line from the helper, "" if none
    bool job_writer = false;  // this step writes the job comment (job_writer.h)
    bool job_merge = false;   // ... and its helper merges the job dir first (--job-writer)
    int lock_fd = -1;         // the node's sampler lock, flocked by this slurmstepd while its helper runs
};
StepState g_step;

std::string step_label(uint32_t id) {
    if (id == kBatchStep) return "batch";
    if (id == kExternStep) return "extern";
    if (id == kInteractiveStep) return "interactive";
    return std::to_string(id);
}

std::string getenv_step(spank_t sp, const char* name) {
    char buf[4096];
    if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return "";
    return buf;
}

std::vector<std::string> job_env(spank_t sp) {
    char** env = nullptr;
    std::vector<std::string> out;
    if (spank_get_item(sp, S_JOB_ENV, &env) == ESPANK_SUCCESS && env != nullptr)
        for (char** e = env; *e != nullptr; ++e) out.emplace_back(*e);
    return out;
}

// NCCL/PyTorch environment help (nccl_env.h) for a recording step: only strings in the step env,
// before any task starts; the files and directories they name are created by NCCL/PyTorch/the
// helper as the user. spank_setenv(overwrite=0) keeps a value the user set meanwhile.
void set_nccl_env(spank_t sp) {
    NcclEnvPlan plan = plan_nccl_env(g_step.config, job_env(sp), g_step.job_num, g_step.out_dir);
    if (!plan.note.empty())
        slurm_info("stallscope: job %s: %s", g_step.job_id.c_str(), shown(plan.note).c_str());
    std::string names;
    for (const auto& [name, value] : plan.set) {
        spank_err_t rc = spank_setenv(sp, name.c_str(), value.c_str(), 0);
        if (rc != ESPANK_SUCCESS && rc != ESPANK_ENV_EXISTS)
            slurm_error("stallscope: job %s: cannot set %s: %s", g_step.job_id.c_str(), shown(name).c_str(),
                        spank_strerror(rc));
        else if (rc == ESPANK_SUCCESS)
            names += " " + name;
    }
    if (plan.enabled)
        slurm_verbose("stallscope: job %s step %s: nccl env:%s", g_step.job_id.c_str(),
                      step_label(g_step.step_id).c_str(),
                      names.empty() ? " (all set by the user)" : names.c_str());
}

// PyTorch flight-recorder variables (flight_recorder_env.h), after the NCCL help: the FIFO directory
// <run_dir>/<jobid> (node-local, removed by job_epilog) is made for the job user and checked first, as
// root, before any task; without it no pipe variable is set, since PyTorch would abort the rank.
void set_flight_recorder_env(spank_t sp) {
    if (!g_step.config.flight_recorder) return;
    const std::vector<std::string> env = job_env(sp);
    std::string pipe_prefix, problem;
    const bool user_chose = find_env(env, "TORCH_NCCL_TRACE_BUFFER_SIZE", nullptr) ||
                            find_env(env, "TORCH_FR_BUFFER_SIZE", nullptr) ||
                            find_env(env, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", nullptr) ||
                            find_env(env, "TORCH_FR_DEBUG_INFO_PIPE_FILE", nullptr);
    if (!user_chose) {
        const std::string dir = job_run_dir(g_step.config, g_step.job_id);
        problem = prepare_pipe_dir(dir, g_step.user.uid, g_step.user.gid);
        if (problem.empty()) pipe_prefix = dir + "/frpipe." + step_label(g_step.step_id) + ".";
    }
    std::string dump_prefix = g_step.out_dir;
    while (dump_prefix.size() > 1 && dump_prefix.back() == '/') dump_prefix.pop_back();
    dump_prefix += "/torch-fr-";
    const FlightRecorderPlan plan = plan_flight_recorder_env(true, env, dump_prefix, pipe_prefix, problem);
    if (!plan.note.empty())
        slurm_info("stallscope: job %s: %s", g_step.job_id.c_str(), shown(plan.note).c_str());
    for (const auto& [name, value] : plan.set) {
        spank_err_t rc = spank_setenv(sp, name.c_str(), value.c_str(), 0);
        if (rc != ESPANK_SUCCESS && rc != ESPANK_ENV_EXISTS)
            slurm_error("stallscope: job %s: cannot set %s: %s", g_step.job_id.c_str(), shown(name).c_str(),
                        spank_strerror(rc));
    }
}

long now_us() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000L + ts.tv_nsec / 1000L;
}

// Is stallscope wanted for this step, and at which interval? Option > STALLSCOPE env > always_on.
bool choose_interval(spank_t sp, unsigned* interval) {
    const OptionSeen& seen = option_seen();
    if (seen.seen) {
        if (seen.interval) *interval = *seen.interval;
        return seen.interval.has_value();
    }
    std::string env = getenv_step(sp, "STALLSCOPE");
    if (!env.empty()) {
        IntervalChoice choice = parse_interval(env.c_str(), g_step.config, "STALLSCOPE");
        if (!choice.seconds) {
            slurm_error("stallscope: job %s: %s; not recording", g_step.job_id.c_str(),
                        shown(choice.error).c_str());
            return false;
        }
        *interval = *choice.seconds;
        return true;
    }
    if (g_step.config.always_on) {
        *interval = g_step.config.default_interval;
        return true;
    }
    return false;
}

bool get_identity(spank_t sp) {
    uint32_t job = 0;
    spank_err_t rc;
    if ((rc = spank_get_item(sp, S_JOB_ID, &job)) != ESPANK_SUCCESS ||
        (rc = spank_get_item(sp, S_JOB_NODEID, &g_step.node_id)) != ESPANK_SUCCESS ||
        (rc = spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &g_step.local_tasks)) != ESPANK_SUCCESS ||
        (rc = spank_get_item(sp, S_JOB_UID, &g_step.user.uid)) != ESPANK_SUCCESS ||
        (rc = spank_get_item(sp, S_JOB_GID, &g_step.user.gid)) != ESPANK_SUCCESS) {
        slurm_error("stallscope: cannot read the job's ids: %s; not recording", spank_strerror(rc));
        return false;
    }
    g_step.job_num = job;
    g_step.job_id = std::to_string(job);
    // `scontrol update JobId=<array id>` addresses the whole array; one task is <array id>_<task id>.
    uint32_t array_id = 0, array_task = 0;
    // A job that is not an array task reports its own id and task NO_VAL (0xfffffffe, seen on 22.05).
    constexpr uint32_t kNoVal = 0xfffffffe, kInfinite = 0xffffffff;
    if (spank_get_item(sp, S_JOB_ARRAY_ID, &array_id) == ESPANK_SUCCESS && array_id != 0 &&
        spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &array_task) == ESPANK_SUCCESS && array_task != kNoVal &&
        array_task != kInfinite)
        g_step.update_id = std::to_string(array_id) + "_" + std::to_string(array_task);
    gid_t* gids = nullptr;
    int ngids = 0;
    if ((rc = spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids)) != ESPANK_SUCCESS) {
        slurm_error("stallscope: job %s: cannot read supplementary groups: %s; not recording",
                    g_step.job_id.c_str(), spank_strerror(rc));
        return false;
    }
    g_step.user.groups.assign(gids, gids + (ngids > 0 ? ngids : 0));
    if (g_step.user.groups.empty()) g_step.user.groups.push_back(g_step.user.gid);
    return true;
}

// Root-side preparation (init_post_opt runs as root): root-owned state for job_epilog. The first
// step on the node creates the state; later steps reuse it.
bool prepare_run_dir() {
    const PluginConfig& c = g_step.config;
    // The output directory is job-controlled (SLURM_SUBMIT_DIR, PWD): stored only when short enough,
    // so the state file stays small and readable by the epilog (L1).
    if (!storable_out_dir(g_step.out_dir)) {
        slurm_error("stallscope: job %s: output directory %s is longer than %zu bytes; not recording",
                    g_step.job_id.c_str(), shown(g_step.out_dir, 120).c_str(), kMaxStoredDirBytes);
        return false;
    }
    std::string err = make_root_dir(c.run_dir);
    std::string state_file = state_path(c.run_dir, g_step.job_id);
    struct stat st {};
    if (err.empty() && lstat(state_file.c_str(), &st) != 0) {
        JobState state{g_step.user.uid,  g_step.user.gid, g_step.user.groups, g_step.out_dir, {},
                       g_step.user.umask};
        const std::string text = serialize_state(state);
        err = text.empty() ? "the job state does not fit " + std::to_string(kMaxStateBytes) + " bytes"
                           : write_root_file(state_file, text);
    } else if (err.empty()) {
        // A later step: keep its output directory too when it differs (output_dir=cwd, srun --chdir).
        std::string read_err;
        std::optional<JobState> state = parse_state(read_root_file(state_file, &read_err).value_or(""));
        if (state && add_out_dir(*state, g_step.out_dir))
            err = write_root_file(state_file, serialize_state(*state));
    }
    if (!err.empty()) {
        slurm_error("stallscope: job %s: %s; not recording", g_step.job_id.c_str(), shown(err).c_str());
        return false;
    }
    return true;
}

enum class LockTake { held, taken, failed };

// One sampler per node per job: the lock is a root-owned 0600 file in the root-owned run_dir (nothing
// the job can fill or replace), flocked by this slurmstepd (root, in init_post_opt) for as long as
// its helper runs. A second step of the job on this node finds it taken and starts no helper.
LockTake take_sampler_lock() {
    const std::string path = lock_path(g_step.config.run_dir, g_step.job_id);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & 077) != 0) {
        slurm_error("stallscope: job %s: sampler lock %s: %s; sampling without de-duplication",
                    g_step.job_id.c_str(), shown(path).c_str(),
                    fd < 0 ? std::strerror(errno) : "not a root-owned 0600 file");
        if (fd >= 0) ::close(fd);
        return LockTake::failed;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(fd);
        if (err == EWOULDBLOCK) return LockTake::taken;
        slurm_error("stallscope: job %s: sampler lock %s: %s; sampling without de-duplication",
                    g_step.job_id.c_str(), shown(path).c_str(), std::strerror(err));
        return LockTake::failed;
    }
    g_step.lock_fd = fd;
    return LockTake::held;
}

void release_sampler_lock() {
    if (g_step.lock_fd >= 0) ::close(g_step.lock_fd);  // closing drops the flock
    g_step.lock_fd = -1;
}

// Is this step's helper the job's writer (job_writer.h)? The batch step leaves a root-owned mark so
// that the srun steps on its node leave the comment to it; the writer's node is marked for job_epilog.
void choose_job_writer() {
    const PluginConfig& c = g_step.config;
    std::string err;
    if (g_step.step_id == kBatchStep) err = write_root_file(batch_mark_path(c.run_dir, g_step.job_id), "1");
    std::string ignored;
    const bool batch_here = g_step.step_id != kBatchStep &&
                            read_root_file(batch_mark_path(c.run_dir, g_step.job_id), &ignored).has_value();
    g_step.job_writer = is_job_writer(g_step.step_id, g_step.node_id, batch_here);
    // A job of many srun steps (no recording batch step) must not merge its growing job dir at every
    // step's end (O(steps^2) reads): only the first writing step merges; later steps write their own
    // segment when it says more, and job_epilog merges once at the end (the summary is then stale).
    const bool comment_written =
        read_root_file(comment_mark_path(c.run_dir, g_step.job_id), &ignored).has_value();
    g_step.job_merge = g_step.job_writer && (g_step.step_id == kBatchStep || !comment_written);
    if (err.empty() && g_step.job_writer)
        err = write_root_file(writer_mark_path(c.run_dir, g_step.job_id), "1");
    if (!err.empty()) slurm_error("stallscope: job %s: %s", g_step.job_id.c_str(), shown(err).c_str());
}

// A helper that was gone before the step ended without leaving a verdict (SIGKILL, OOM kill, crash):
// the job still gets a segment, so sacct says the recording is incomplete instead of nothing.
std::string helper_died_segment(const StopResult& stopped) {
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    std::string segment = std::string(kSegmentPrefix) + "UNKNOWN conf=0.00 top=helper_died";
    if (!stopped.exit_status.empty()) {
        std::string how = stopped.exit_status.substr(0, stopped.exit_status.find(' ', 7));  // "signal 9"
        for (char& c : how)
            if (c == ' ') c = '_';
        segment += ":" + how;
    }
    segment += " gpus=0 dur=0";
    if (host[0] != '\0') segment += std::string(" node=") + host;
    return sanitize_segment(segment).value_or("");
}

void stop_and_collect() {
    if (g_step.helper.read_fd < 0) return;
    pid_t pid = g_step.helper.pid;
    StopResult stopped = stop_helper(g_step.helper, g_step.config.stop_timeout);
    const bool not_sampling = stopped.output.rfind(kNotSamplingLine, 0) == 0;
    // The job's writer prints its node segment before the merge and the job segment after it: the last
    // complete line wins, so a merge cut short by stop_timeout still leaves the node's verdict (I2).
    std::optional<std::string> segment = not_sampling ? std::nullopt : last_segment(stopped.output);
    const std::string how = stopped.exit_status.empty() ? "" : " (" + stopped.exit_status + ")";
    if (stopped.killed)
        slurm_error("stallscope: job %s step %s: helper %d did not finish within stop_timeout=%us; killed it",
                    g_step.job_id.c_str(), step_label(g_step.step_id).c_str(), pid,
                    g_step.config.stop_timeout);
    if (!stopped.output.empty() && !segment && !not_sampling)
        slurm_error(
            "stallscope: job %s: ignoring the helper's result line: not a printable 'stallscope/1 ...' "
            "segment",
            g_step.job_id.c_str());
    if (not_sampling) {
        slurm_verbose("stallscope: job %s step %s: helper %d left the node to another step of the job%s",
                      g_step.job_id.c_str(), step_label(g_step.step_id).c_str(), pid, how.c_str());
        return;
    }
    if (!segment && stopped.ended_early) {
        slurm_error(
            "stallscope: job %s step %s: helper %d died during the step without a verdict%s "
            "(killed or crashed; the timeline keeps what it flushed)",
            g_step.job_id.c_str(), step_label(g_step.step_id).c_str(), pid,
            how.empty() ? " (exit status already reaped by slurmstepd)" : how.c_str());
        g_step.segment = helper_died_segment(stopped);
        return;
    }
    slurm_verbose("stallscope: job %s step %s: helper %d stopped after %d ms%s%s", g_step.job_id.c_str(),
                  step_label(g_step.step_id).c_str(), pid, stopped.waited_ms,
                  segment ? " with a verdict" : " without a verdict", how.c_str());
    if (!segment) return;
    g_step.segment = *segment;
    std::string file = segment_file(*segment);
    auto slash = file.rfind('/');
    if (file.empty() || file.front() != '/' || slash == 0) return;
    // Remember where the verdict really went (the helper may have fallen back to a tmp dir) so
    // job_epilog summarizes that directory too. Root-owned, outside the user's dir.
    std::string err =
        write_root_file(result_path(g_step.config.run_dir, g_step.job_id), file.substr(0, slash));
    if (!err.empty()) slurm_error("stallscope: job %s: %s", g_step.job_id.c_str(), shown(err).c_str());
}

// Runs in the last task_exit, not in slurm_spank_exit: slurmstepd reports the last task's exit to
// srun only after the task_exit hooks, so the job is still RUNNING here. For an srun-only job, srun
// completes the allocation as soon as it hears of it; by slurm_spank_exit the job is finished
// (scontrol update then fails, §0.5) and the job's kill sequence SIGTERMs whatever stepd started.
//
// Only the job's writer writes (job_writer.h): its helper's line is the merged job segment, so a batch
// job gets exactly one comment write, whatever its node count. Other steps' segments are only logged.
// An srun-only or salloc job has one writer per step (node 0): a comment write costs 4 scontrol calls,
// and a job of 200 short steps must not pay that 200 times, so a later step rewrites the comment only
// when its verdict says more (comment_rank), remembered in a root-owned mark file on this node.
void write_comment() {
    if (g_step.segment.empty() || g_step.config.comment == CommentTarget::none) return;
    if (!g_step.job_writer) {
        slurm_verbose("stallscope: job %s step %s: node verdict: %s", g_step.job_id.c_str(),
                      step_label(g_step.step_id).c_str(), g_step.segment.c_str());
        return;
    }
    const std::string mark = comment_mark_path(g_step.config.run_dir, g_step.job_id);
    const int rank = comment_rank(g_step.segment);
    std::string ignored;
    if (std::optional<std::string> written = read_root_file(mark, &ignored);
        written && !written->empty() && rank <= std::atoi(written->c_str())) {
        slurm_verbose("stallscope: job %s step %s: job comment kept (an earlier step's verdict says as much)",
                      g_step.job_id.c_str(), step_label(g_step.step_id).c_str());
        return;
    }
    std::string err = write_job_comment(g_step.config, g_step.job_id, g_step.segment, g_step.update_id);
    if (!err.empty()) {
        slurm_error("stallscope: job %s: job comment not updated: %s", g_step.job_id.c_str(),
                    shown(err, 1024).c_str());
        return;
    }
    // Counted by tests/integration/multinode_tests.sh (one write per job): keep the wording.
    slurm_info("stallscope: job %s step %s: job comment written: %s", g_step.job_id.c_str(),
               step_label(g_step.step_id).c_str(), g_step.segment.c_str());
    err = write_root_file(mark, std::to_string(rank));
    if (!err.empty()) slurm_error("stallscope: job %s: %s", g_step.job_id.c_str(), shown(err).c_str());
}

}  // namespace

int stepd_init(spank_t sp, int ac, char** av) {
    g_step = StepState{};
    g_step.config = load_config(ac, av);
    return register_option(sp, g_step.config);
}

int stepd_init_post_opt(spank_t sp) {
    // The extern step sees neither options nor the job environment and is SIGKILLed at job end
    // without a graceful window (§0.4): never sample there.
    if (spank_get_item(sp, S_JOB_STEPID, &g_step.step_id) != ESPANK_SUCCESS || g_step.step_id == kExternStep)
        return 0;
    if (!get_identity(sp)) return 0;
    unsigned interval = 0;
    if (!choose_interval(sp, &interval)) return 0;
    g_step.cwd = getenv_step(sp, "PWD");
    // The job's umask, as srun/sbatch recorded it (slurmstepd applies it to the job's tasks): the helper
    // and the epilog's summarize get it too (L8); 077 when it is missing or malformed.
    const std::string mask = getenv_step(sp, "SLURM_UMASK");
    if (!parse_umask(mask, &g_step.user.umask)) {
        g_step.user.umask = 077;
        if (!mask.empty())
            slurm_verbose("stallscope: job %s: SLURM_UMASK=%s is not a umask; the helper runs with 077",
                          g_step.job_id.c_str(), shown(mask, 16).c_str());
    }
    // %u from the job's uid, never from SLURM_JOB_USER in the (user-controlled) job env.
    JobFacts facts{g_step.job_id, "", getenv_step(sp, "SLURM_SUBMIT_DIR"), g_step.cwd, g_step.user.uid};
    g_step.out_dir = resolve_output_dir(g_step.config, facts);
    if (!prepare_run_dir()) return 0;
    if (take_sampler_lock() == LockTake::taken) {
        slurm_verbose("stallscope: job %s step %s: another step of the job samples this node; no helper",
                      g_step.job_id.c_str(), step_label(g_step.step_id).c_str());
    } else {
        choose_job_writer();
        g_step.interval = interval;
        g_step.enabled = true;
    }
    // The NCCL help goes to every recording step, also one whose node is sampled by another step (an
    // srun inside a recording batch job is where NCCL runs).
    set_nccl_env(sp);
    set_flight_recorder_env(sp);
    return 0;
}

int stepd_user_init(spank_t sp) {
    if (!g_step.enabled || g_step.helper.read_fd >= 0) return 0;
    long t0 = now_us();
    std::vector<std::string> env = helper_env(job_env(sp), g_step.config.allow_test_env);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    add_helper_nccl_env(env, host, g_step.cwd);
    set_env(env, "SLURM_JOB_ID", g_step.job_id);
    set_env(env, "SLURM_STEP_ID", step_label(g_step.step_id));
    set_env(env, "SLURM_NODEID", std::to_string(g_step.node_id));
    std::vector<std::string> argv =
        without_lock_file(record_argv(g_step.config, g_step.out_dir, g_step.interval, g_step.job_id));
    if (g_step.job_merge) {
        argv.push_back("--job-writer");
        argv.push_back("--merge-wait-seconds");
        argv.push_back(std::to_string(merge_wait_for(g_step.config.stop_timeout)));
    }
    std::string error;
    std::optional<HelperProcess> helper = spawn_helper(argv, env, g_step.user, &error);
    if (!helper) {
        slurm_error("stallscope: job %s step %s: cannot start helper %s: %s; the job runs without stallscope",
                    g_step.job_id.c_str(), step_label(g_step.step_id).c_str(), shown(argv[0]).c_str(),
                    shown(error).c_str());
        g_step.enabled = false;
        release_sampler_lock();
        return 0;
    }
    g_step.helper = *helper;
    slurm_verbose("stallscope: job %s step %s: helper pid %d started in %ld us (interval %us, out %s%s)",
                  g_step.job_id.c_str(), step_label(g_step.step_id).c_str(), helper->pid, now_us() - t0,
                  g_step.interval, shown(g_step.out_dir).c_str(),
                  g_step.job_merge    ? ", job writer"
                  : g_step.job_writer ? ", comment writer"
                                      : "");
    return 0;
}

int stepd_task_exit(spank_t) {
    if (!g_step.enabled) return 0;
    // The last local task: after this slurmstepd SIGKILLs the whole container (§0.1), so this is the
    // only place for a graceful stop.
    if (++g_step.exited_tasks < g_step.local_tasks || g_step.helper.read_fd < 0) return 0;
    stop_and_collect();
    release_sampler_lock();
    write_comment();
    return 0;
}

int stepd_exit(spank_t) {
    if (g_step.enabled)
        kill_helper(g_step.helper);  // no task_exit ran (launch failure): nothing graceful left
    release_sampler_lock();
    return 0;
}

}  // namespace stallscope::spank
