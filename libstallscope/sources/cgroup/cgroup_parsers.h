// Pure parsers for the job-cgroup source: where this process's Slurm job cgroup is (from
// /proc/self/cgroup) and what its files say. No I/O; bad input leaves fields null and adds a warning.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

// The Slurm directories found in a cgroup path by walking up from the process's own cgroup:
// /system.slice/slurmstepd.scope/job_42/step_0/user/task_0 -> job_dir ".../job_42", step_dir
// ".../job_42/step_0". The job directory is the parent of step_* (Slurm 26.05 names it by SLUID, so its
// name is not relied on), or a job_* component when there is no step_* (a process in the job's own dir).
struct SlurmCgroupPath {
    std::string job_dir, step_dir;  // relative to the controller mount, leading '/'; step_dir may be ""
    std::string job_id, step_id;    // "42" / "0" | "batch" | "extern" | "interactive"
};
std::optional<SlurmCgroupPath> find_slurm_dirs(std::string_view cgroup_path);

// /proc/<pid>/cgroup: "0::/path" (v2) and "N:ctrl[,ctrl]:/path" (v1). The v2 path when it lies in a
// Slurm job, else the v1 memory controller's path when that does; version 2 or 1.
struct ProcessCgroup {
    int version = 0;  // 0: no line found
    std::string path;
};
ProcessCgroup parse_proc_cgroup(std::string_view text);

// Flat keyed files ("key value" per line: memory.events, cpu.stat, memory.oom_control). A present key
// whose value is not a u64 is warned about and left null.
std::optional<std::uint64_t> keyed_value(std::string_view text, std::string_view key, std::string_view file,
                                         std::vector<std::string>& warnings);

// A single-value file (memory.current, memory.peak, memory.max with "max" -> nullopt without a warning).
Counter single_value(std::string_view text, std::string_view file, std::vector<std::string>& warnings);

// /proc/<pid>/status "Uid:\t1000\t1000\t1000\t1000" -> the real uid.
std::optional<std::uint32_t> status_uid(std::string_view text);

}  // namespace stallscope
