// The job's OOM kills on a cgroup v1 memory hierarchy. v1 counts a kill only in the memory cgroup of the
// task that was killed: the kernel's memcg_memory_event() stops at the first level on the legacy
// hierarchy, so Slurm's job_N/memory.oom_control reads 0 while step_M/task_K's has the kill (seen on Slurm
// 26.05 with cgroup/v1 here: the job ended OUT_OF_MEMORY, the job-level counter stayed 0; and by hand on
// this machine (kernel 6.18): limit on job_1, a hog in job_1/step_0/task_0 killed, oom_kill 1 in task_0
// only). The job's count is the sum over its subtree. Step cgroups disappear when their step ends, so each
// directory's last count is kept: the sum never goes back and a kill in a finished step is not lost.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stallscope {

class V1OomKillCounter {
  public:
    // job_memory_dir: the job's directory under the v1 memory mount (…/memory/slurm/uid_1000/job_77).
    explicit V1OomKillCounter(std::string job_memory_dir) : job_dir_(std::move(job_memory_dir)) {}

    // The job directory's own count plus every descendant's (step_*, task_*, user/…: at most kMaxDepth
    // levels, kMaxDirectories directories per sample). Warnings name a file that did not parse.
    std::uint64_t total(std::uint64_t job_own_count, std::vector<std::string>& warnings);

    static constexpr int kMaxDepth = 4;                   // job/step_0/user/task_0 on cgroup/v1 plugins
    static constexpr std::size_t kMaxDirectories = 4096;  // per sample; a bound, not an expected size

  private:
    std::string job_dir_;
    std::map<std::string, std::uint64_t> last_;  // descendant (relative path) -> its last oom_kill
    bool warned_bound_ = false;
};

}  // namespace stallscope
