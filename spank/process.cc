#include "spank/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stallscope::spank {

namespace {

// Everything the child needs, prepared before fork(): only async-signal-safe calls after it.
struct ChildPlan {
    const char* path;
    char* const* argv;
    char* const* envp;
    const Credentials* who;  // null: keep the current identity
    bool ignore_sigterm;     // survive the job's kill sequence for a few ms (scontrol from slurmstepd)
    int liveness_fd;         // -> fd 3, or -1
    int output_fd;           // -> stdout+stderr, or -1 for /dev/null
    int report_fd;           // CLOEXEC pipe: (stage, errno) on failure
};

enum Stage : int { kSignals = 1, kIdentity, kVerify, kFds, kExec };
const char* stage_name(int stage) {
    switch (stage) {
        case kSignals:
            return "resetting signals";
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
    // slurmstepd runs at -1000; reset before dropping privileges (the file turns root-owned after a
    // credential change).
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        ssize_t ignored = write(oom, "0", 1);
        (void)ignored;
        close(oom);
    }
    if (p.who != nullptr) {
        // In user_init ruid is still 0 (euid = user): regain euid 0, then drop all three ids (§0.3).
        const Credentials& w = *p.who;
        if (setresuid(static_cast<uid_t>(-1), 0, static_cast<uid_t>(-1)) != 0) child_fail(report, kIdentity);
        if (setgroups(w.groups.size(), w.groups.data()) != 0) child_fail(report, kIdentity);
        if (setresgid(w.gid, w.gid, w.gid) != 0) child_fail(report, kIdentity);
        if (setresuid(w.uid, w.uid, w.uid) != 0) child_fail(report, kIdentity);
        uid_t r, e, s;
        gid_t gr, ge, gs;
        if (getresuid(&r, &e, &s) != 0 || r != w.uid || e != w.uid || s != w.uid) child_fail(report, kVerify);
        if (getresgid(&gr, &ge, &gs) != 0 || gr != w.gid || ge != w.gid || gs != w.gid)
            child_fail(report, kVerify);
        if (w.uid != 0 && setresuid(static_cast<uid_t>(-1), 0, static_cast<uid_t>(-1)) == 0) {
            errno = EPERM;
            child_fail(report, kVerify);
        }
    }
    if (chdir("/") != 0) child_fail(report, kFds);
    int live = move_high(p.liveness_fd);
    int out = move_high(p.output_fd);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || (p.liveness_fd >= 0 && live < 0) || (p.output_fd >= 0 && out < 0))
        child_fail(report, kFds);
    if (dup2(null_fd, 0) < 0 || dup2(out >= 0 ? out : null_fd, 1) < 0 ||
        dup2(out >= 0 ? out : null_fd, 2) < 0)
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

// Forks and runs child_exec; reads the report pipe until exec succeeded (EOF) or failed.
pid_t fork_exec(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                const Credentials* who, int liveness_fd, int output_fd, bool ignore_sigterm,
                std::string* error) {
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
    ChildPlan plan{argv[0].c_str(), cargv.ptrs.data(), cenv.ptrs.data(), who,
                   ignore_sigterm,  liveness_fd,       output_fd,        report[1]};
    pid_t pid = fork();
    if (pid == 0) child_exec(plan);
    close(report[1]);
    if (pid < 0) {
        *error = std::string("fork: ") + std::strerror(errno);
        close(report[0]);
        return -1;
    }
    int msg[2] = {0, 0};
    ssize_t n;
    do n = read(report[0], msg, sizeof msg);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == static_cast<ssize_t>(sizeof msg)) {
        *error = std::string(stage_name(msg[0])) + " failed: " + std::strerror(msg[1]);
        waitpid(pid, nullptr, 0);
        return -1;
    }
    return pid;
}

long now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

// Appends what is readable (non-blocking fd) to out, up to cap; true at EOF or error.
bool drain(int fd, std::string& out, std::size_t cap) {
    char buf[4096];
    while (true) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf,
                       static_cast<std::size_t>(std::min<std::size_t>(n, cap - std::min(cap, out.size()))));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return !(n < 0 && errno == EAGAIN);
    }
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

void send_signal(const HelperProcess& h, int sig) {
    if (h.pidfd >= 0 && syscall(SYS_pidfd_send_signal, h.pidfd, sig, nullptr, 0U) == 0) return;
    if (h.pid > 0) kill(h.pid, sig);
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
    long deadline = now_ms() + wait_ms;
    while (true) {
        int status = 0;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return describe_status(status);
        if (r < 0 && errno != EINTR) return "";
        if (now_ms() >= deadline) return "";
        usleep(10000);
    }
}

void close_helper(HelperProcess& h) {
    if (h.read_fd >= 0) close(h.read_fd);
    if (h.pidfd >= 0) close(h.pidfd);
    h = HelperProcess{};
}

}  // namespace

std::optional<HelperProcess> spawn_helper(const std::vector<std::string>& argv,
                                          const std::vector<std::string>& env, const Credentials& who,
                                          std::string* error) {
    int live[2];
    // O_CLOEXEC: the tasks slurmstepd forks later must never inherit either end.
    if (pipe2(live, O_CLOEXEC) != 0) {
        *error = std::string("pipe: ") + std::strerror(errno);
        return std::nullopt;
    }
    pid_t pid = fork_exec(argv, env, &who, live[1], -1, false, error);
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
        send_signal(h, SIGKILL);
        if (h.pid > 0) kill(-h.pid, SIGKILL);  // its process group (setpgid in the child)
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
    if (!drain(h.read_fd, ignored, 0)) {
        send_signal(h, SIGKILL);
        if (h.pid > 0) kill(-h.pid, SIGKILL);
    }
    reap(h.pid, 200);
    close_helper(h);
}

CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::optional<Credentials>& who, unsigned timeout_s, bool ignore_sigterm) {
    CommandResult result;
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        result.error = std::string("pipe: ") + std::strerror(errno);
        return result;
    }
    pid_t pid = fork_exec(argv, env, who ? &*who : nullptr, -1, out[1], ignore_sigterm, &result.error);
    close(out[1]);
    if (pid < 0) {
        close(out[0]);
        return result;
    }
    result.started = true;
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    long deadline = now_ms() + 1000L * timeout_s;
    bool eof = read_until_eof(out[0], result.output, 256 * 1024, deadline);
    close(out[0]);
    int status = 0;
    while (true) {
        pid_t r = eof ? waitpid(pid, &status, WNOHANG) : 0;
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {  // reaped elsewhere: status unknown
            result.error = std::string("waitpid: ") + std::strerror(errno);
            return result;
        }
        if (!eof || now_ms() >= deadline) {
            result.timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return result;
        }
        usleep(5000);
    }
    if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.error = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return result;
}

std::string find_program(const std::string& name, const std::vector<std::string>& dirs) {
    for (const std::string& dir : dirs) {
        std::string path = dir + "/" + name;
        if (access(path.c_str(), X_OK) == 0) return path;
    }
    return "";
}

}  // namespace stallscope::spank
