// Child processes started from root-run plugin code (no SPANK symbols): the long-lived helper with
// the verified spawn recipe (research/spank-design.md §2.4), and bounded one-shot commands
// (scontrol, `stallscope summarize`).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace stallscope::spank {

struct Credentials {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
    // The job's umask (SLURM_UMASK, helper_spec.h job_umask), set in the child before exec so the helper
    // and summarize create files as the job's own processes would; 077 when the job's is not known.
    mode_t umask = 077;
};

// Resource limits for a child that runs as the job user, soft = hard (it cannot raise them again);
// 0 keeps the inherited value, and an inherited hard limit lower than ours is kept. slurmd's unit sets
// MEMLOCK and STACK to infinity, which the helper must not inherit.
struct ChildLimits {
    rlim_t memlock_bytes = 8ULL << 20;  // the kernel's default since 5.16
    rlim_t stack_bytes = 8ULL << 20;    // the usual ulimit -s
    rlim_t address_space_bytes = 0;
    rlim_t cpu_seconds = 0;
};
// summarize reads timelines line by line; 4 GiB of address space is far above what it needs and far
// below what would hurt the node.
inline constexpr rlim_t kCommandAddressSpaceBytes = 4ULL << 30;

// The long-lived helper: MEMLOCK and STACK only (a long job needs its CPU time).
ChildLimits helper_limits();
// A one-shot command run as the user (summarize): also RLIMIT_AS and RLIMIT_CPU = timeout_s + 1.
ChildLimits command_limits(unsigned timeout_s);

// CLOCK_MONOTONIC in milliseconds, for callers that keep one deadline across several calls.
long monotonic_ms();

// A running helper: pid (+ pidfd where the kernel has one, so a recycled pid is never signalled) and
// the read end of the liveness pipe whose write end only the helper holds.
struct HelperProcess {
    pid_t pid = -1;
    int pidfd = -1;
    int read_fd = -1;
};

// fork + (in the child) unblock signals and reset dispositions, setpgid, regain euid 0 (ruid is 0 in
// user_init), oom_score_adj 0 (written and read back: the spawn fails otherwise), helper_limits(),
// become `who` completely (setgroups/setresgid/setresuid, verified), umask(who.umask), stdin/stdout/stderr
// /dev/null, the
// liveness pipe's write end on fd 3, close_range(4..), execve(argv[0], argv, env). Returns the
// process, or nullopt with *error naming the failed step (exec errors are reported synchronously
// through a CLOEXEC pipe, so "No such file or directory" surfaces here).
std::optional<HelperProcess> spawn_helper(const std::vector<std::string>& argv,
                                          const std::vector<std::string>& env, const Credentials& who,
                                          std::string* error);

struct StopResult {
    std::string output;        // what the helper wrote to fd 3 (first 4 KiB)
    bool killed = false;       // SIGKILLed after the timeout
    bool ended_early = false;  // fd 3 was already at EOF: the helper had exited before we asked it to
    std::string exit_status;   // "exit 0", "signal 9 (Killed)"; "" when slurmstepd reaped it first
    int waited_ms = 0;
};

// SIGTERM + SIGCONT (unless the pipe already reached EOF; SIGCONT so a SIGSTOPped helper wakes up, sees
// the pending SIGTERM and writes its verdict), read fd 3 until EOF for at most timeout_s, then SIGKILL
// and a short final wait; reaps the child if it is still ours. Leaves `helper` closed.
StopResult stop_helper(HelperProcess& helper, unsigned timeout_s);

// SIGKILL without waiting (slurm_spank_exit when no task_exit ran), then close and reap.
void kill_helper(HelperProcess& helper);

struct CommandResult {
    bool started = false;
    bool timed_out = false;
    int exit_code = -1;  // -1 when killed by a signal or not started
    std::string output;  // stdout+stderr (stdout only with stdout_only), first 256 KiB
    std::string error;   // why it did not start
};

// Runs argv[0] (absolute path, no shell, no PATH search) with env, optionally as `who` (full drop as
// in spawn_helper, plus command_limits(timeout_s)), stdout+stderr captured, killed (whole process
// group) after timeout_s. Returns within timeout_s + 3 s whatever the child does (2 s for exec, 1 s
// to kill and reap; a child that outlives SIGKILL, D state on a hung NFS, is left unreaped and named
// in error); callers with an overall deadline pass the seconds left. With ignore_sigterm the child
// starts with SIGTERM ignored, so the job's own kill sequence (scancel, time limit: SIGTERM to
// everything slurmstepd started) does not cut a short scontrol call short. With stdout_only, stderr goes
// to /dev/null (a JSON reader's warnings must not end up inside its document).
CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::optional<Credentials>& who, unsigned timeout_s,
                          bool ignore_sigterm = false, bool stdout_only = false);

inline constexpr std::size_t kCommandOutputCap = 256 * 1024;

// Runs fn(arg) in a forked child (no exec) that has become `who` completely (as run_command's child:
// setgroups/setresgid/setresuid, verified; RLIMIT_CPU from the time left) and returns its result
// (0..120), or -1 when the child could not become `who`, did not finish by deadline_ms (it is killed
// then, and a child stuck in D state is left behind after 1 s), or was reaped elsewhere. fn runs after
// fork() in a process that may have had threads: it must be async-signal-safe (no malloc, no stdio).
int run_forked_as(const Credentials& who, long deadline_ms, int (*fn)(const void*), const void* arg);

// "" when `path` is safe for root to execute: absolute, a regular executable file owned by root and not
// group/other-writable, in directories (every component up to /, symlinks resolved) owned by root and
// not group/other-writable unless sticky (like /tmp: nobody else can replace a root-owned entry there).
// Otherwise says what is wrong.
std::string check_root_owned_program(const std::string& path);

}  // namespace stallscope::spank
