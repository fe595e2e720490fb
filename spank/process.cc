#include "spank/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace stallscope::spank {

namespace {

// Everything the child needs, prepared before fork(): only async-signal-safe calls after it.
struct ChildPlan {
    const char* path;
    char* const* argv;
    char* const* envp;
    const Credentials* who;     // null: keep the current identity
    const ChildLimits* limits;  // applied when who is set
    bool ignore_sigterm;        // survive the job's kill sequence for a few ms (scontrol from slurmstepd)
    int liveness_fd;            // -> fd 3, or -1
    int output_fd;              // -> stdout+stderr, or -1 for /dev/null
    bool stdout_only;           // stderr to /dev/null even with an output_fd
    int report_fd;              // CLOEXEC pipe: (stage, errno) on failure
};

enum Stage : int { kSignals = 1, kOomScore, kLimits, kIdentity, kVerify, kFds, kExec };
const char* stage_name(int stage) {
    switch (stage) {
        case kSignals:
            return "resetting signals";
        case kOomScore:
            return "resetting oom_score_adj to 0 (slurmstepd runs at -1000)";
        case kLimits:
            return "setting resource limits";
        case kIdentity:
            return "switching to the job user";
        case kVerify:
            return "verifying the job user";
        case kFds:
            return "setting up file descriptors";
        case kExec:
            return "exec";
        default:
            return "child setup";
    }
}

[[noreturn]] void child_fail(int report_fd, int stage) {
    int msg[2] = {stage, errno};
    ssize_t ignored = write(report_fd, msg, sizeof msg);
    (void)ignored;
    _exit(127);
}

int move_high(int fd) {
    return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 10);
}

// slurmstepd runs at -1000 and its children inherit that: a helper that loads user-chosen code must
// not be spared by the OOM killer. Writes 0 and reads it back (a write that "succeeded" but did not
// take must not pass). Async-signal-safe.
bool reset_oom_score_adj() {
    int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[16] = {};
    bool ok = write(fd, "0", 1) == 1 && lseek(fd, 0, SEEK_SET) == 0 && read(fd, buf, sizeof buf - 1) > 0;
    int saved = errno;
    close(fd);
    errno = saved;
    if (ok && !(buf[0] == '0' && (buf[1] == '\n' || buf[1] == '\0'))) {
        errno = EPERM;
        ok = false;
    }
    return ok;
}

// slurmd's systemd unit sets LimitMEMLOCK/LimitSTACK=infinity and children inherit them: give a child
// that runs as the user bounded limits (soft = hard, so it cannot raise them again).
bool apply_limits(const ChildLimits& limits) {
    struct Entry {
        int resource;
        rlim_t value;
    };
    const Entry entries[] = {{RLIMIT_MEMLOCK, limits.memlock_bytes},
                             {RLIMIT_STACK, limits.stack_bytes},
                             {RLIMIT_AS, limits.address_space_bytes},
                             {RLIMIT_CPU, limits.cpu_seconds}};
    for (const Entry& e : entries) {
        if (e.value == 0) continue;  // 0: keep what we have
        rlimit current{};
        if (getrlimit(e.resource, &current) != 0) return false;
        // Never raise: a limit the admin set lower than ours stays.
        rlim_t value =
            current.rlim_max != RLIM_INFINITY && current.rlim_max < e.value ? current.rlim_max : e.value;
        rlimit wanted{value, value};
        if (setrlimit(e.resource, &wanted) != 0) return false;
    }
    return true;
}

// Becomes `w` for good: groups, gid, uid, each verified, and root cannot be regained. Returns 0, or the
// stage that failed (errno set). Async-signal-safe.
int become(const Credentials& w) {
    if (setgroups(w.groups.size(), w.groups.data()) != 0) return kIdentity;
    if (setresgid(w.gid, w.gid, w.gid) != 0) return kIdentity;
    if (setresuid(w.uid, w.uid, w.uid) != 0) return kIdentity;
    uid_t r, e, s;
    gid_t gr, ge, gs;
    if (getresuid(&r, &e, &s) != 0 || r != w.uid || e != w.uid || s != w.uid) return kVerify;
    if (getresgid(&gr, &ge, &gs) != 0 || gr != w.gid || ge != w.gid || gs != w.gid) return kVerify;
    if (w.uid != 0 && setresuid(static_cast<uid_t>(-1), 0, static_cast<uid_t>(-1)) == 0) {
        errno = EPERM;
        return kVerify;
    }
    return 0;
}

[[noreturn]] void child_exec(const ChildPlan& p) {
    int report = move_high(p.report_fd);
    if (report < 0) _exit(127);
    // slurmstepd blocks SIGTERM & co. and children inherit the mask across exec (§0.2).
    sigset_t none;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) child_fail(report, kSignals);
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    // The helper (it has the liveness fd) starts with its stop signals blocked: a stop that comes while it
    // is still starting (a step of a few ms) stays pending until it has installed its handlers and
    // unblocks them (helper/stop_signal.cc), instead of killing it before it wrote a verdict.
    if (p.liveness_fd >= 0) {
        sigset_t stop;
        sigemptyset(&stop);
        for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&stop, sig);
        if (sigprocmask(SIG_BLOCK, &stop, nullptr) != 0) child_fail(report, kSignals);
    }
    if (p.ignore_sigterm) signal(SIGTERM, SIG_IGN);
    setpgid(0, 0);
    if (p.who != nullptr) {
        // In user_init slurmstepd has dropped to the job user's euid and is non-dumpable, so its /proc
        // files are root-owned: regain euid 0 first (ruid is still 0 there, spank-design.md §2.4).
        if (setresuid(static_cast<uid_t>(-1), 0, static_cast<uid_t>(-1)) != 0) child_fail(report, kIdentity);
        if (!reset_oom_score_adj()) child_fail(report, kOomScore);
        if (!apply_limits(*p.limits)) child_fail(report, kLimits);
    } else {
        // Root's own short commands (scontrol): best effort, they run no user code.
        reset_oom_score_adj();
    }
    if (p.who != nullptr) {
        // euid 0 was regained above: drop all three ids for good (§0.3).
        const int stage = become(*p.who);
        if (stage != 0) child_fail(report, stage);
        // The job's umask, as slurmstepd gives the job's tasks (L8): the helper's directory and files
        // are then as private as the user's own.
        umask(p.who->umask);
    }
    if (chdir("/") != 0) child_fail(report, kFds);
    int live = move_high(p.liveness_fd);
    int out = move_high(p.output_fd);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || (p.liveness_fd >= 0 && live < 0) || (p.output_fd >= 0 && out < 0))
        child_fail(report, kFds);
    if (dup2(null_fd, 0) < 0 || dup2(out >= 0 ? out : null_fd, 1) < 0 ||
        dup2(out >= 0 && !p.stdout_only ? out : null_fd, 2) < 0)
        child_fail(report, kFds);
    if (live >= 0 && dup2(live, 3) < 0) child_fail(report, kFds);
    if (dup3(report, 4, O_CLOEXEC) < 0) child_fail(report, kFds);
    report = 4;
    if (live < 0) close(3);
    if (syscall(SYS_close_range, 5U, ~0U, 0U) != 0) {
        for (int fd = 5; fd < 65536; ++fd) close(fd);
    }
    execve(p.path, p.argv, p.envp);
    child_fail(report, kExec);
}

struct CStrings {
    std::vector<char*> ptrs;
    explicit CStrings(const std::vector<std::string>& v) {
        for (const std::string& s : v) ptrs.push_back(const_cast<char*>(s.c_str()));
        ptrs.push_back(nullptr);
    }
};

constexpr int kExecReportTimeoutMs = 2000;  // exec takes milliseconds; seconds means a hung file system
constexpr int kFinalReapMs = 1000;  // after SIGKILL; a child stuck in D state (hung NFS) is left behind
constexpr std::size_t kDrainBytesPerCall = 1 << 20;

long now_ms() {
    return monotonic_ms();
}

// waitpid(pid) for at most wait_ms. True when reaped (status in *status); false on timeout or when
// someone else reaped it (ECHILD).
bool reap_bounded(pid_t pid, int wait_ms, int* status) {
    long deadline = now_ms() + wait_ms;
    while (true) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (status) *status = st;
            return true;
        }
        if (r < 0 && errno != EINTR) return false;  // errno ECHILD: reaped elsewhere
        if (now_ms() >= deadline) {
            errno = ETIMEDOUT;
            return false;
        }
        usleep(5000);
    }
}

// Forks and runs child_exec; reads the report pipe until exec succeeded (EOF) or failed.
pid_t fork_exec(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                const Credentials* who, const ChildLimits& limits, int liveness_fd, int output_fd,
                bool ignore_sigterm, bool stdout_only, std::string* error) {
    if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
        *error = "program path must be absolute";
        return -1;
    }
    CStrings cargv(argv), cenv(env);
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        *error = std::string("pipe: ") + std::strerror(errno);
        return -1;
    }
    ChildPlan plan{argv[0].c_str(), cargv.ptrs.data(), cenv.ptrs.data(), who,         &limits,
                   ignore_sigterm,  liveness_fd,       output_fd,        stdout_only, report[1]};
    pid_t pid = fork();
    if (pid == 0) child_exec(plan);
    close(report[1]);
    if (pid < 0) {
        *error = std::string("fork: ") + std::strerror(errno);
        close(report[0]);
        return -1;
    }
    // Bounded: an exec from a hung network file system must not hold slurmstepd.
    pollfd pfd{report[0], POLLIN, 0};
    int ready;
    do ready = poll(&pfd, 1, kExecReportTimeoutMs);
    while (ready < 0 && errno == EINTR);
    if (ready <= 0) {
        close(report[0]);
        int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0U));  // never kill() a maybe-recycled pid
        if (pidfd >= 0) {
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0U);
            close(pidfd);
        }
        reap_bounded(pid, kFinalReapMs, nullptr);
        *error = "the child did not reach exec within " + std::to_string(kExecReportTimeoutMs / 1000) +
                 " s; killed it";
        return -1;
    }
    int msg[2] = {0, 0};
    ssize_t n;
    do n = read(report[0], msg, sizeof msg);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == static_cast<ssize_t>(sizeof msg)) {
        *error = std::string(stage_name(msg[0])) + " failed: " + std::strerror(msg[1]);
        reap_bounded(pid, kFinalReapMs, nullptr);  // it _exits right after the report
        return -1;
    }
    return pid;
}

// Appends what is readable (non-blocking fd) to out, up to cap; true at EOF or error. Bounded: a child
// that writes without pause hands control back after kDrainBytesPerCall, so callers see their deadline.
bool drain(int fd, std::string& out, std::size_t cap) {
    char buf[4096];
    for (std::size_t total = 0; total < kDrainBytesPerCall;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf,
                       static_cast<std::size_t>(std::min<std::size_t>(n, cap - std::min(cap, out.size()))));
            total += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return !(n < 0 && errno == EAGAIN);
    }
    return false;
}

// Waits for EOF on fd (or deadline); true at EOF.
bool read_until_eof(int fd, std::string& out, std::size_t cap, long deadline_ms) {
    while (true) {
        if (drain(fd, out, cap)) return true;
        long left = deadline_ms - now_ms();
        if (left <= 0) return false;
        pollfd pfd{fd, POLLIN, 0};
        poll(&pfd, 1, static_cast<int>(std::min(left, 200L)));
    }
}

// Only through the pidfd: once pidfd_send_signal says ESRCH the helper is gone (and maybe reaped by
// slurmstepd's wait loop), so its pid may already belong to someone else; never kill(pid) as root then.
// True when the signal was delivered (the helper still holds its pid, so its process group id, which
// the kernel never hands out while a process holds it, is still ours too).
bool send_signal(const HelperProcess& h, int sig) {
    return h.pidfd >= 0 && syscall(SYS_pidfd_send_signal, h.pidfd, sig, nullptr, 0U) == 0;
}

// SIGKILL to the helper and, while it provably still holds its pid, to its process group (setpgid
// in the child) so what it started dies too.
void kill_helper_group(const HelperProcess& h) {
    if (send_signal(h, SIGKILL) && h.pid > 0) kill(-h.pid, SIGKILL);
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    return "status " + std::to_string(status);
}

// Reaps pid if it is our child and gone within wait_ms and returns how it ended; "" when slurmstepd's
// own wait loop (wait3 on any child while tasks run) reaped it first (ECHILD), which is fine.
std::string reap(pid_t pid, int wait_ms) {
    int status = 0;
    return reap_bounded(pid, wait_ms, &status) ? describe_status(status) : "";
}

void close_helper(HelperProcess& h) {
    if (h.read_fd >= 0) close(h.read_fd);
    if (h.pidfd >= 0) close(h.pidfd);
    h = HelperProcess{};
}

}  // namespace

long monotonic_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

ChildLimits helper_limits() {
    return ChildLimits{};
}

ChildLimits command_limits(unsigned timeout_s) {
    ChildLimits limits;
    limits.address_space_bytes = kCommandAddressSpaceBytes;
    limits.cpu_seconds = timeout_s + 1;
    return limits;
}

std::optional<HelperProcess> spawn_helper(const std::vector<std::string>& argv,
                                          const std::vector<std::string>& env, const Credentials& who,
                                          std::string* error) {
    int live[2];
    // O_CLOEXEC: the tasks slurmstepd forks later must never inherit either end.
    if (pipe2(live, O_CLOEXEC) != 0) {
        *error = std::string("pipe: ") + std::strerror(errno);
        return std::nullopt;
    }
    pid_t pid = fork_exec(argv, env, &who, helper_limits(), live[1], -1, false, false, error);
    close(live[1]);
    if (pid < 0) {
        close(live[0]);
        return std::nullopt;
    }
    fcntl(live[0], F_SETFL, fcntl(live[0], F_GETFL) | O_NONBLOCK);
    HelperProcess h;
    h.pid = pid;
    h.read_fd = live[0];
    h.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0U));
    if (h.pidfd >= 0) fcntl(h.pidfd, F_SETFD, FD_CLOEXEC);
    return h;
}

StopResult stop_helper(HelperProcess& h, unsigned timeout_s) {
    StopResult result;
    if (h.read_fd < 0) return result;
    long start = now_ms();
    bool eof = drain(h.read_fd, result.output, 4096);
    result.ended_early = eof;
    if (!eof) {
        send_signal(h, SIGTERM);
        send_signal(h, SIGCONT);
        eof = read_until_eof(h.read_fd, result.output, 4096, start + 1000L * timeout_s);
    }
    if (!eof) {
        result.killed = true;
        kill_helper_group(h);
        read_until_eof(h.read_fd, result.output, 4096, now_ms() + 1000);
    }
    result.exit_status = reap(h.pid, 200);
    result.waited_ms = static_cast<int>(now_ms() - start);
    close_helper(h);
    return result;
}

void kill_helper(HelperProcess& h) {
    if (h.read_fd < 0) return;
    std::string ignored;
    if (!drain(h.read_fd, ignored, 0)) kill_helper_group(h);
    reap(h.pid, 200);
    close_helper(h);
}

CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::optional<Credentials>& who, unsigned timeout_s, bool ignore_sigterm,
                          bool stdout_only) {
    CommandResult result;
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        result.error = std::string("pipe: ") + std::strerror(errno);
        return result;
    }
    const ChildLimits limits = who ? command_limits(timeout_s) : ChildLimits{0, 0, 0, 0};
    pid_t pid = fork_exec(argv, env, who ? &*who : nullptr, limits, -1, out[1], ignore_sigterm, stdout_only,
                          &result.error);
    close(out[1]);
    if (pid < 0) {
        close(out[0]);
        return result;
    }
    result.started = true;
    // Our unreaped child holds its pid, but slurmstepd's wait loop may reap it at any moment: signal it
    // only through a pidfd (as for the helper), never by a pid that may have been recycled.
    HelperProcess child;
    child.pid = pid;
    child.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0U));
    if (child.pidfd >= 0) fcntl(child.pidfd, F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    long deadline = now_ms() + 1000L * timeout_s;
    bool eof = read_until_eof(out[0], result.output, kCommandOutputCap, deadline);
    close(out[0]);
    int status = 0;
    errno = 0;
    bool reaped = eof && reap_bounded(pid, static_cast<int>(std::max(0L, deadline - now_ms())), &status);
    if (eof && !reaped && errno == ECHILD) {  // reaped elsewhere: status unknown
        result.error = "waitpid: the command was reaped elsewhere";
        if (child.pidfd >= 0) close(child.pidfd);
        return result;
    }
    if (!reaped) {
        result.timed_out = true;
        kill_helper_group(child);
        // Bounded: a child in D state (hung NFS) ignores SIGKILL until its I/O returns; leave it to
        // the parent's wait loop rather than hold the caller.
        if (!reap_bounded(pid, kFinalReapMs, &status)) result.error = "killed, but not reaped within 1 s";
        if (child.pidfd >= 0) close(child.pidfd);
        return result;
    }
    if (child.pidfd >= 0) close(child.pidfd);
    if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.error = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return result;
}

int run_forked_as(const Credentials& who, long deadline_ms, int (*fn)(const void*), const void* arg) {
    const long left_ms = deadline_ms - now_ms();
    if (left_ms <= 0) return -1;
    const ChildLimits limits = command_limits(static_cast<unsigned>((left_ms + 999) / 1000));
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
        setpgid(0, 0);
        if (!apply_limits(limits) || become(who) != 0) _exit(127);
        const int result = fn(arg);
        _exit(result < 0 || result > 120 ? 126 : result);
    }
    HelperProcess child;
    child.pid = pid;
    child.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0U));
    int status = 0;
    const bool reaped = reap_bounded(pid, static_cast<int>(std::max(0L, deadline_ms - now_ms())), &status);
    if (!reaped) {
        kill_helper_group(child);
        reap_bounded(pid, kFinalReapMs, nullptr);
    }
    if (child.pidfd >= 0) close(child.pidfd);
    if (!reaped || !WIFEXITED(status) || WEXITSTATUS(status) > 120) return -1;
    return WEXITSTATUS(status);
}

std::string check_root_owned_program(const std::string& path) {
    if (path.empty() || path.front() != '/') return path + ": not an absolute path";
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) return path + ": " + std::strerror(errno);
    std::string real = resolved;
    struct stat st {};
    if (stat(real.c_str(), &st) != 0) return real + ": " + std::strerror(errno);
    if (!S_ISREG(st.st_mode) || (st.st_mode & S_IXUSR) == 0) return real + ": not an executable regular file";
    if (st.st_uid != 0) return real + ": not owned by root";
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return real + ": writable by group or others";
    // realpath left no symlinks: check every directory from the file's up to /.
    std::string dir = real;
    while (dir.size() > 1) {
        dir.resize(std::max<std::size_t>(dir.rfind('/'), 1));
        if (lstat(dir.c_str(), &st) != 0) return dir + ": " + std::strerror(errno);
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0) return dir + ": directory not owned by root";
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0)
            return dir + ": directory writable by group or others";
    }
    return "";
}

}  // namespace stallscope::spank
