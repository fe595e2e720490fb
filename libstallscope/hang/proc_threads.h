// What the job's own threads are doing, from READ-class /proc files only (stat, wchan, environ): two
// passes a second apart give each thread's state, kernel wait symbol and CPU used in between. Never
// `syscall`, `stack` or `mem` (ATTACH-class: refused to a sibling of the tasks under Yama scope 1, and not
// needed), never a signal or ptrace: reading these cannot slow or stop a job process.
// Caveat (doc/hang-evidence.md): wchan reads "0" on x86 ORC kernels 4.14-5.15 and for running threads;
// "0" is kept as unknown, not as a wait symbol.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// /proc/<pid>/task/<tid>/stat, read after the last ')' (comm may hold spaces and parentheses).
struct TaskStat {
    std::string comm;
    char state = '?';
    std::uint64_t utime_ticks = 0, stime_ticks = 0;
};
std::optional<TaskStat> parse_task_stat(std::string_view text);

// The global rank of a process from its exec-time environment: RANK (torchrun), else SLURM_PROCID, else
// OMPI_COMM_WORLD_RANK / PMI_RANK; local_rank from LOCAL_RANK, else SLURM_LOCALID. -1 when absent.
struct RankIdentity {
    int rank = -1, local_rank = -1;
    std::string source;  // the variable the rank came from
};
RankIdentity rank_from_environ(std::string_view environ_block);

// cgroup.procs: one pid per line; garbage lines skipped; at most max_pids.
std::vector<pid_t> parse_cgroup_procs(std::string_view text, std::size_t max_pids);

// Every pid in a cgroup directory and the directories below it (a Slurm job's step_*/user/task_*), read
// from their cgroup.procs; at most max_pids, at most 6 levels down.
std::vector<pid_t> pids_in_cgroup_tree(const std::string& cgroup_dir, std::size_t max_pids = 256);

// Without a job cgroup (proctrack/linuxproc): the processes of `uid` whose exec-time environment holds
// SLURM_JOB_ID=<job_id> exactly, `skip` left out (the helper itself), ascending; at most max_pids, from at
// most max_entries entries of proc_root. Where several slurmd share one /proc (--enable-multiple-slurmd,
// the test cluster's namespaces) the job's ranks of other "nodes" are visible too: when some of them say
// SLURMD_NODENAME=<host> (short names compared), only those are kept; when none does (NodeName is not
// the host name), all are. Only our own uid's environ is readable anyway; a process that changed its uid
// or cleared its environment is not found (the capture then has the GPU's pids).
std::vector<pid_t> pids_of_job_by_environ(const std::string& proc_root, uid_t uid, std::string_view job_id,
                                          std::string_view host, pid_t skip, std::size_t max_pids = 256,
                                          std::size_t max_entries = 100'000);

// What a thread did between the passes, in words a person reads at 3 a.m.
enum class ThreadActivity { unknown, spinning, runnable, futex_wait, io_wait, sleeping, stopped, exited };
const char* to_string(ThreadActivity a);

struct ThreadEvidence {
    pid_t tid = 0;
    std::string comm;
    char state_first = '?', state_second = '?';
    std::string wchan;       // second pass; "" when unknown ("0")
    double cpu_seconds = 0;  // utime + stime between the passes
    double user_seconds = 0;
    ThreadActivity activity = ThreadActivity::unknown;
};

struct ProcessEvidence {
    pid_t pid = 0;
    std::string comm;
    RankIdentity rank;
    std::vector<ThreadEvidence> threads;  // main thread first
    int threads_in_d = 0;
    bool gone = false;  // exited between or before the passes
    const ThreadEvidence* main_thread() const { return threads.empty() ? nullptr : &threads.front(); }
};

struct ProcLimits {
    std::size_t max_processes = 256;
    std::size_t max_threads = 4096;  // all processes together
    double gap_seconds = 1.0;        // between the passes
};

struct ProcEvidence {
    double gap_seconds = 0;  // measured
    std::vector<ProcessEvidence> processes;
    std::size_t threads = 0;
    bool truncated = false;  // more threads or processes than the limits: the rest not read
    std::vector<std::string> warnings;
};

// Two passes over `pids` under `proc_root` (normally "/proc"), `limits.gap_seconds` apart.
ProcEvidence sample_job_threads(const std::string& proc_root, const std::vector<pid_t>& pids,
                                const ProcLimits& limits = {});

ThreadActivity classify_thread(char state, std::string_view wchan, double cpu_share);

Json to_json(const ProcEvidence& evidence);

}  // namespace stallscope
