// The job's own cgroup: found once from <procfs>/self/cgroup by walking up to Slurm's job directory, then
// its memory, OOM, CPU and pressure files read every sample from kept-open fds. Also places each GPU
// process NVML listed (Gpu::processes) in this step, this job, another job or another user's session
// from <procfs>/<pid>/cgroup and status, so a foreign process on an allocated GPU is a reason of its own.
#include <map>
#include <set>

#include "libstallscope/sources/cgroup/cgroup_parsers.h"
#include "libstallscope/sources/cgroup/cgroup_v1_oom.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/procfs/kept_open_file.h"
#include "libstallscope/sources/procfs/procfs_parsers.h"
#include "libstallscope/util/counter_file.h"

namespace stallscope {
namespace {

struct ProcessPlace {
    std::string cgroup, job_id, owner;
    std::optional<std::uint32_t> uid;
};

class CgroupSource final : public Source {
  public:
    explicit CgroupSource(const Roots& roots) : roots_(roots) {}
    std::string_view name() const override { return "cgroup"; }

    void sample(Snapshot& snapshot) override {
        if (!located_) locate();
        // Outside Slurm a missing job cgroup is expected, not news (a workstation, a Kubernetes pod).
        if (!locate_warning_.empty() && snapshot.context.scheduler == "slurm") warn_once(locate_warning_);
        if (found_) read_job(snapshot);
        place_gpu_processes(snapshot);
        for (auto& w : pending_) snapshot.warnings.push_back(std::move(w));
        pending_.clear();
    }

  private:
    void warn_once(std::string message) {
        if (warned_.insert(message).second) pending_.push_back(std::move(message));
    }

    // Once per run: the cgroup of this process does not change while the step runs.
    void locate() {
        located_ = true;
        std::string error;
        const std::string self = roots_.procfs + "/self/cgroup";
        const auto text = read_text_file(self, error, 64 << 10);
        if (const auto status = read_text_file(roots_.procfs + "/self/status", error, 64 << 10))
            own_uid_ = status_uid(*status);
        if (!text) {
            locate_warning_ = "cgroup: " + self + ": " + error + "; job_cgroup is null";
            return;
        }
        const ProcessCgroup own = parse_proc_cgroup(*text);
        const auto dirs = find_slurm_dirs(own.path);
        if (!dirs) {
            locate_warning_ = "cgroup: " + self + " (" + own.path +
                              ") is not inside a Slurm job_*/step_* cgroup; job_cgroup is null, rules use "
                              "node-wide /proc numbers";
            return;
        }
        found_ = true;
        dirs_ = *dirs;
        job_.version = own.version;
        job_.path = dirs->job_dir;
        job_.scope = "job";  // one helper samples the whole job on a node (flock), so the job's numbers
        job_.job_id = dirs->job_id;
        job_.step_id = dirs->step_id;
        const std::string mount = roots_.sysfs + "/fs/cgroup";
        auto file = [&](const std::string& controller, const char* name) {
            return KeptOpenFile((controller.empty() ? mount : mount + "/" + controller) + dirs->job_dir +
                                "/" + name);
        };
        if (own.version == 2) {
            memory_current_ = file("", "memory.current");
            memory_peak_ = file("", "memory.peak");
            memory_max_ = file("", "memory.max");
            memory_events_ = file("", "memory.events");
            cpu_stat_ = file("", "cpu.stat");
            cpu_pressure_ = file("", "cpu.pressure");
            io_pressure_ = file("", "io.pressure");
            memory_pressure_ = file("", "memory.pressure");
        } else {  // v1: same relative path under each controller's hierarchy; no PSI per cgroup
            memory_current_ = file("memory", "memory.usage_in_bytes");
            memory_peak_ = file("memory", "memory.max_usage_in_bytes");
            memory_max_ = file("memory", "memory.limit_in_bytes");
            memory_events_ = file("memory", "memory.oom_control");
            v1_oom_kills_.emplace(mount + "/memory" + dirs->job_dir);
            cpu_stat_ = file("cpu", "cpu.stat");
            cpuacct_usage_ = file("cpuacct", "cpuacct.usage");
        }
    }

    std::optional<std::string_view> read(std::optional<KeptOpenFile>& file) {
        if (!file) return std::nullopt;
        std::string error;
        auto text = file->read(error);
        if (!text) warn_once("cgroup: " + file->path() + ": " + error + "; left null");
        return text;
    }

    void read_job(Snapshot& snapshot) {
        JobCgroup job = job_;
        std::vector<std::string> w;
        if (auto t = read(memory_current_))
            job.memory_current_bytes = single_value(*t, memory_current_->path(), w);
        if (auto t = read(memory_peak_)) job.memory_peak_bytes = single_value(*t, memory_peak_->path(), w);
        if (auto t = read(memory_max_)) {
            job.memory_max_bytes = single_value(*t, memory_max_->path(), w);
            // v1 writes "no limit" as a huge page-rounded number, not "max".
            if (job.version == 1 && job.memory_max_bytes && *job.memory_max_bytes >= (1ULL << 62))
                job.memory_max_bytes.reset();
        }
        if (auto t = read(memory_events_)) {
            const std::string& path = memory_events_->path();
            if (job.version == 2) job.memory_oom_events = keyed_value(*t, "oom", path, w);
            job.memory_oom_kill_events = keyed_value(*t, "oom_kill", path, w);
            if (!job.memory_oom_kill_events && t->find("oom_kill ") == std::string_view::npos)
                warn_once("cgroup: " + path +
                          ": no oom_kill line (kernel < 4.13?); OOM kills of the job unknown");
            if (job.memory_oom_kill_events && v1_oom_kills_)
                job.memory_oom_kill_events = v1_oom_kills_->total(*job.memory_oom_kill_events, w);
        }
        if (auto t = read(cpu_stat_)) {
            const std::string& path = cpu_stat_->path();
            if (job.version == 2) {
                job.cpu_usage_usec = keyed_value(*t, "usage_usec", path, w);
                job.cpu_user_usec = keyed_value(*t, "user_usec", path, w);
                job.cpu_system_usec = keyed_value(*t, "system_usec", path, w);
                job.cpu_throttled_usec = keyed_value(*t, "throttled_usec", path, w);
            } else if (auto ns = keyed_value(*t, "throttled_time", path, w)) {
                job.cpu_throttled_usec = *ns / 1000;
            }
            // Present only when the cpu controller is enabled for the cgroup (Slurm's CPU limits).
            job.cpu_nr_periods = keyed_value(*t, "nr_periods", path, w);
            job.cpu_nr_throttled = keyed_value(*t, "nr_throttled", path, w);
        }
        if (auto t = read(cpuacct_usage_)) {
            if (auto ns = single_value(*t, cpuacct_usage_->path(), w)) job.cpu_usage_usec = *ns / 1000;
        }
        if (auto t = read(cpu_pressure_))
            parse_pressure(*t, cpu_pressure_->path(), PsiResource::cpu, job.psi, w);
        if (auto t = read(io_pressure_))
            parse_pressure(*t, io_pressure_->path(), PsiResource::io, job.psi, w);
        if (auto t = read(memory_pressure_))
            parse_pressure(*t, memory_pressure_->path(), PsiResource::memory, job.psi, w);
        for (auto& message : w) warn_once("cgroup: " + message);
        snapshot.job_cgroup = std::move(job);
    }

    ProcessPlace place(std::int64_t pid) {
        ProcessPlace out;
        out.owner = "unknown";
        std::string error;
        const std::string base = roots_.procfs + "/" + std::to_string(pid);
        const auto text = read_text_file(base + "/cgroup", error, 64 << 10);
        if (!text) {
            // NVML reports host PIDs: inside a container's PID namespace they are not in our /proc.
            warn_once("cgroup: GPU process " + std::to_string(pid) + ": " + base + "/cgroup: " + error +
                      " (exited, or another PID namespace); owner unknown");
            return out;
        }
        if (const auto status = read_text_file(base + "/status", error, 64 << 10))
            out.uid = status_uid(*status);
        const ProcessCgroup cg = parse_proc_cgroup(*text);
        out.cgroup = cg.path;
        const auto dirs = find_slurm_dirs(cg.path);
        if (dirs) out.job_id = dirs->job_id;
        if (dirs && found_ && dirs->job_dir == dirs_.job_dir)
            out.owner = !dirs_.step_dir.empty() && dirs->step_dir == dirs_.step_dir ? "step" : "job";
        else if (dirs)
            out.owner = "other_job";
        else if (out.uid && own_uid_ && *out.uid != *own_uid_)
            out.owner = "other_user";
        return out;
    }

    void place_gpu_processes(Snapshot& snapshot) {
        std::map<std::int64_t, ProcessPlace> seen;
        for (auto& gpu : snapshot.gpus) {
            if (!gpu.processes) continue;
            for (auto& p : *gpu.processes) {
                auto it = seen.find(p.pid);
                if (it == seen.end()) {
                    auto cached = places_.find(p.pid);
                    it = seen.emplace(p.pid, cached != places_.end() ? cached->second : place(p.pid)).first;
                }
                p.cgroup = it->second.cgroup;
                p.job_id = it->second.job_id;
                p.uid = it->second.uid;
                p.owner = it->second.owner;
            }
        }
        places_ = std::move(seen);  // forget exited PIDs, so a recycled PID is placed afresh
    }

    Roots roots_;
    bool located_ = false, found_ = false;
    SlurmCgroupPath dirs_;
    std::string locate_warning_;
    JobCgroup job_;  // identity, copied into each sample
    std::optional<std::uint32_t> own_uid_;
    std::optional<KeptOpenFile> memory_current_, memory_peak_, memory_max_, memory_events_, cpu_stat_,
        cpuacct_usage_, cpu_pressure_, io_pressure_, memory_pressure_;
    std::optional<V1OomKillCounter> v1_oom_kills_;  // v1 only: kills are counted in the task's own cgroup
    std::map<std::int64_t, ProcessPlace> places_;
    std::set<std::string> warned_;
    std::vector<std::string> pending_;
};

}  // namespace

std::unique_ptr<Source> make_cgroup_source(const Roots& roots) {
    return std::make_unique<CgroupSource>(roots);
}

}  // namespace stallscope
