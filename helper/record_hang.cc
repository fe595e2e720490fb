#include "helper/record_hang.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <exception>

#include "libstallscope/hang/proc_threads.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope::cli {
namespace {

double round_to(double v, double unit) {
    return std::round(v / unit) * unit;
}

}  // namespace

RecordHangHook::RecordHangHook(Roots roots, std::string step, std::string host)
    : roots_(std::move(roots)), step_(std::move(step)), host_(std::move(host)) {}

// The job's processes on this node from its cgroup tree (every step, the batch script, the ranks); without
// a job cgroup (proctrack/linuxproc), our uid's processes whose environment names this Slurm job. Empty
// when neither finds one: fill_from_sample then takes the GPUs' processes of this step or job.
std::vector<pid_t> RecordHangHook::job_pids(const Snapshot& sample) {
    if (!sample.job_cgroup || sample.job_cgroup->path.empty()) {
        if (sample.context.scheduler != "slurm") return {};
        char host[256] = "";
        if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        return pids_of_job_by_environ(roots_.procfs, ::getuid(), sample.context.job_id, host, ::getpid());
    }
    const JobCgroup& cg = *sample.job_cgroup;
    // v1: the memory controller's hierarchy, where parse_proc_cgroup found the job (cgroup source).
    const std::string dir = roots_.sysfs + "/fs/cgroup" + (cg.version == 1 ? "/memory" : "") + cg.path;
    std::vector<pid_t> pids = pids_in_cgroup_tree(dir);
    // The helper lives in the job's tree too (slurmstepd's cgroup): left out here, so a tree holding
    // nothing else still falls back to the GPU processes.
    if (roots_.procfs == "/proc") std::erase(pids, ::getpid());
    return pids;
}

void RecordHangHook::after_sample(const Snapshot& sample, const Profile& profile, const std::string& dir,
                                  const Append& append) {
    take(append);
    if (!episodes_.confirmed(profile)) return;
    const int episode = episodes_.episode();
    try {
        if (capture_.running()) {
            // One capture at a time: the previous episode's is still waiting for its dumps.
            warnings_.push_back("hang episode " + std::to_string(episode) +
                                ": the previous evidence capture still runs; no evidence for this one");
            return;
        }
        CaptureRequest req;
        req.out_dir = dir;
        req.step = step_;
        req.host = host_;
        req.episode = episode;
        req.proc_root = roots_.procfs;
        req.pids = job_pids(sample);
        fill_from_sample(req, sample, profile);
        // The capture thread inherits a mask blocking the stop signals, so SIGTERM always lands on the
        // sampling thread, whose sleep it must interrupt (stop_signal.h: the stop within ~1 s).
        sigset_t stop_signals, old;
        sigemptyset(&stop_signals);
        for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGHUP}) sigaddset(&stop_signals, sig);
        ::pthread_sigmask(SIG_BLOCK, &stop_signals, &old);
        try {
            capture_.start(std::move(req));
        } catch (...) {  // no thread (EAGAIN): the sampling thread must get its signals back all the same
            ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
            throw;
        }
        ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
        capture_episode_ = episode;
    } catch (const std::exception& e) {  // bad_alloc, a filesystem error: the job goes on without evidence
        warnings_.push_back("hang episode " + std::to_string(episode) + ": evidence capture not started (" +
                            e.what() + ")");
    }
}

void RecordHangHook::at_stop(double seconds, const Append& append) {
    capture_.stop(seconds);
    take(append);
    if (capture_.running())
        warnings_.push_back("hang episode " + std::to_string(capture_episode_) +
                            ": evidence capture still running at the stop; its file may be missing");
}

void RecordHangHook::take(const Append& append) {
    auto result = capture_.take_result();
    if (!result) return;
    const Json event = hang_evidence_event(*result, capture_episode_);
    if (!result->written)
        warnings_.push_back("hang episode " + std::to_string(capture_episode_) + ": no evidence file (" +
                            (result->warnings.empty() ? std::string("unknown") : result->warnings.back()) +
                            ")");
    append(event);
}

Json hang_evidence_event(const CaptureResult& r, int episode) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    Json event{{"type", "event"},
               {"time", format_rfc3339(now)},
               {"kind", "hang_evidence"},
               {"episode", episode},
               {"file", r.written ? Json(r.path) : Json(nullptr)},
               {"flight_recorder", r.flight_recorder.empty() ? "unknown" : r.flight_recorder},
               {"dumps", r.dumps},
               {"wall_seconds", round_to(r.wall_seconds, 0.01)},
               {"cpu_seconds", round_to(r.cpu_seconds, 0.001)},
               {"file_bytes", r.file_bytes}};
    // A few of the capture's own problems, bounded: the evidence file has them all.
    Json warnings = Json::array();
    for (std::size_t i = 0; i < r.warnings.size() && i < 3; ++i) warnings.push_back(r.warnings[i]);
    if (!warnings.empty()) event["warnings"] = std::move(warnings);
    return event;
}

}  // namespace stallscope::cli
