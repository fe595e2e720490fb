// Regression tests for the root-run spawn paths of issue 17: oom_score_adj and rlimits of the helper,
// RLIMIT_AS/CPU of commands run as the user, no signals by a maybe-recycled pid, bounded task_exit.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "spank/config.h"
#include "spank/process.h"

using namespace stallscope::spank;

namespace {

constexpr uid_t kNobody = 65534;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    return static_cast<bool>(out.flush());
}

// A non-zero oom_score_adj the child must not keep: -500 like slurmstepd's -1000 where we may lower it
// (CAP_SYS_RESOURCE), else 500 (the reproduction; raising needs no privilege).
std::string set_nonzero_adj() {
    if (write_text("/proc/self/oom_score_adj", "-500")) return "-500\n";
    return write_text("/proc/self/oom_score_adj", "500") ? "500\n" : "";
}

// The state slurmstepd is in during user_init in production: oom_score_adj non-zero (-1000 there),
// MEMLOCK/STACK unlimited (slurmd's unit), euid = the job user, ruid 0, non-dumpable. Restored on scope exit.
struct SlurmstepdLikeState {
    std::string old_adj = read_text("/proc/self/oom_score_adj");
    std::string adj;
    rlimit old_memlock{}, old_stack{};
    bool ok = false;
    SlurmstepdLikeState() {
        getrlimit(RLIMIT_MEMLOCK, &old_memlock);
        getrlimit(RLIMIT_STACK, &old_stack);
        rlimit inf{RLIM_INFINITY, RLIM_INFINITY};
        adj = set_nonzero_adj();
        // Unlimited like slurmd's unit where we may raise hard limits (CAP_SYS_RESOURCE); else as is.
        setrlimit(RLIMIT_MEMLOCK, &inf);
        setrlimit(RLIMIT_STACK, &inf);
        ok = !adj.empty() && prctl(PR_SET_DUMPABLE, 0) == 0 &&
             setresuid(static_cast<uid_t>(-1), kNobody, static_cast<uid_t>(-1)) == 0;
    }
    ~SlurmstepdLikeState() {
        int rc = setresuid(static_cast<uid_t>(-1), 0, static_cast<uid_t>(-1));
        (void)rc;
        prctl(PR_SET_DUMPABLE, 1);
        setrlimit(RLIMIT_MEMLOCK, &old_memlock);
        setrlimit(RLIMIT_STACK, &old_stack);
        write_text("/proc/self/oom_score_adj", old_adj);
    }
};

}  // namespace

TEST_CASE("helper spawn from slurmstepd's user_init state: oom_score_adj 0, bounded MEMLOCK/STACK") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root (negative oom_score_adj, seteuid)");
        return;
    }
    StopResult stopped;
    std::string error;
    rlimit memlock{}, stack{};
    {
        SlurmstepdLikeState stepd;
        getrlimit(RLIMIT_MEMLOCK, &memlock);
        getrlimit(RLIMIT_STACK, &stack);
        REQUIRE(stepd.ok);
        REQUIRE(read_text("/proc/self/oom_score_adj") == stepd.adj);
        // The "helper" reports what it inherited on fd 3.
        std::optional<HelperProcess> h =
            spawn_helper({"/bin/sh", "-c", "exec >&3; cat /proc/self/oom_score_adj; ulimit -Hl; ulimit -Hs"},
                         {"PATH=/usr/bin:/bin"}, {kNobody, kNobody, {kNobody}}, &error);
        REQUIRE_MESSAGE(h, error);
        // Let it finish on its own (POLLHUP: it closed fd 3), so the stop's SIGTERM cannot cut it short.
        pollfd pfd{h->read_fd, 0, 0};
        for (int i = 0; i < 50 && !(pfd.revents & POLLHUP); ++i) poll(&pfd, 1, 100);
        stopped = stop_helper(*h, 5);
    }
    // 8 MiB each, or the inherited hard limit where that is lower.
    auto kib = [](const rlimit& l) {
        return std::to_string(l.rlim_max == RLIM_INFINITY ? 8192 : std::min<rlim_t>(8192, l.rlim_max / 1024));
    };
    CHECK(stopped.output == "0\n" + kib(memlock) + "\n" + kib(stack) + "\n");
}

TEST_CASE("run_command as the user: RLIMIT_AS and RLIMIT_CPU from the timeout, oom_score_adj 0") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    std::string old_adj = read_text("/proc/self/oom_score_adj");
    REQUIRE_FALSE(set_nonzero_adj().empty());
    CommandResult r = run_command({"/bin/sh", "-c", "cat /proc/self/oom_score_adj; ulimit -Hv; ulimit -Ht"},
                                  {"PATH=/usr/bin:/bin"}, Credentials{kNobody, kNobody, {kNobody}}, 7);
    write_text("/proc/self/oom_score_adj", old_adj);
    CHECK(r.exit_code == 0);
    CHECK(r.output == "0\n4194304\n8\n");
    // scontrol (no identity change) keeps unlimited resources: it is root's own short command.
    r = run_command({"/bin/sh", "-c", "ulimit -Hv"}, {"PATH=/usr/bin:/bin"}, std::nullopt, 5);
    CHECK(r.output == "unlimited\n");
}

TEST_CASE("stopping a helper whose pidfd says it is gone never signals its (maybe recycled) pid") {
    // An innocent process now holding the pid number the stored HelperProcess names.
    pid_t innocent = fork();
    if (innocent == 0) {
        pause();
        _exit(0);
    }
    REQUIRE(innocent > 0);
    // A pidfd of a helper that already exited and was reaped (as slurmstepd's wait loop does).
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    int gone_fd = static_cast<int>(syscall(SYS_pidfd_open, gone, 0U));
    REQUIRE(gone_fd >= 0);
    waitpid(gone, nullptr, 0);
    int pipe_fds[2];
    // Non-blocking like spawn_helper's; the write end stays open: no EOF, so kill_helper signals.
    REQUIRE(pipe2(pipe_fds, O_NONBLOCK) == 0);
    HelperProcess h;
    h.pid = innocent;
    h.pidfd = gone_fd;
    h.read_fd = pipe_fds[0];
    kill_helper(h);
    usleep(50000);
    int status = 0;
    CHECK(waitpid(innocent, &status, WNOHANG) == 0);  // still running: nobody signalled it
    kill(innocent, SIGKILL);
    waitpid(innocent, nullptr, 0);
    close(pipe_fds[1]);
}

TEST_CASE("run_command returns within its bound when the child keeps running after closing its output") {
    long start = monotonic_ms();
    CommandResult r = run_command({"/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, {"PATH=/usr/bin:/bin"},
                                  std::nullopt, 1);
    long took = monotonic_ms() - start;
    CHECK(r.timed_out);
    CHECK(took < 3000);
}

TEST_CASE("config: stop_timeout + scontrol calls must fit task_exit_budget; shrunk and reported otherwise") {
    PluginConfig d = default_config();
    CHECK(task_exit_worst_case(d) <= d.task_exit_budget);
    ConfigParse maxed = parse_plugin_args({"stop_timeout=300", "scontrol_timeout=120"});
    CHECK(task_exit_worst_case(maxed.config) <= maxed.config.task_exit_budget);
    CHECK(maxed.config.scontrol_timeout == 1);
    CHECK(maxed.config.stop_timeout == 48);  // 3 Slurm commands per comment write (ping, job reader, update)
    REQUIRE(maxed.errors.size() == 1);
    CHECK(maxed.errors[0].find("task_exit_budget=58") != std::string::npos);
    ConfigParse roomy =
        parse_plugin_args({"stop_timeout=300", "scontrol_timeout=120", "task_exit_budget=900"});
    CHECK(roomy.errors.empty());
    CHECK(roomy.config.stop_timeout == 300);
    CHECK(parse_plugin_args({"task_exit_budget=9"}).errors.size() == 1);
}

TEST_CASE("config: job_reader, the root-side JSON reader of the job record (M1)") {
    CHECK(default_config().job_reader.front() == '/');
    CHECK(default_config().job_reader.find("stallscope-slurm-job") != std::string::npos);
    ConfigParse p = parse_plugin_args({"job_reader=/usr/bin/scontrol"});
    CHECK(p.errors.empty());
    CHECK(p.config.job_reader == "/usr/bin/scontrol");
    CHECK(parse_plugin_args({"job_reader=scontrol"}).errors.size() == 1);
}

TEST_CASE("config: SLURM_UMASK values") {
    mode_t m = 0;
    CHECK((parse_umask("0022", &m) && m == 022));
    CHECK((parse_umask("077", &m) && m == 077));
    CHECK((parse_umask("0", &m) && m == 0));
    CHECK_FALSE(parse_umask("", &m));
    CHECK_FALSE(parse_umask("0088", &m));
    CHECK_FALSE(parse_umask("01777", &m));
    CHECK_FALSE(parse_umask("22 ", &m));
    CHECK_FALSE(parse_umask("-022", &m));
}

TEST_CASE("L8: the helper and commands run as the user get the job's umask, 077 when unknown") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root (identity switch)");
        return;
    }
    const mode_t old = umask(022);  // slurmstepd's, inherited by the children before the fix
    Credentials who{kNobody, kNobody, {kNobody}};
    CHECK(run_command({"/bin/sh", "-c", "umask"}, {}, who, 5).output == "0077\n");
    who.umask = 027;
    CHECK(run_command({"/bin/sh", "-c", "umask"}, {}, who, 5).output == "0027\n");
    // The long-lived helper (its fd 3 is the liveness pipe).
    std::string error;
    auto h = spawn_helper({"/bin/sh", "-c", "umask >&3; exec sleep 5"}, {}, who, &error);
    REQUIRE(h);
    StopResult stopped = stop_helper(*h, 2);
    CHECK(stopped.output == "0027\n");
    umask(old);
}

TEST_CASE("run_command stdout_only: a reader's stderr never lands in the document it prints") {
    CommandResult r = run_command({"/bin/sh", "-c", "echo '{\"jobs\":[]}'; echo warning >&2"}, {},
                                  std::nullopt, 5, false, true);
    CHECK(r.output == "{\"jobs\":[]}\n");
    r = run_command({"/bin/sh", "-c", "echo out; echo err >&2"}, {}, std::nullopt, 5);
    CHECK(r.output.find("err") != std::string::npos);
}

TEST_CASE("run_forked_as: the function runs as the user, bounded by the deadline") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root (identity switch)");
        return;
    }
    const Credentials who{kNobody, kNobody, {kNobody}};
    static auto uid_is_nobody = [](const void*) {
        return getuid() == kNobody && geteuid() == kNobody ? 7 : 3;
    };
    CHECK(run_forked_as(who, monotonic_ms() + 5000, uid_is_nobody, nullptr) == 7);
    static auto hang = [](const void*) {
        while (true) pause();
        return 0;
    };
    const long t0 = monotonic_ms();
    CHECK(run_forked_as(who, monotonic_ms() + 300, hang, nullptr) == -1);
    CHECK(monotonic_ms() - t0 < 2000);
    CHECK(run_forked_as(who, monotonic_ms() - 1, uid_is_nobody, nullptr) == -1);  // no time left: not run
}

TEST_CASE("config: allow_test_env and scontrol keys") {
    CHECK(default_config().scontrol == "/usr/bin/scontrol");
    CHECK_FALSE(default_config().allow_test_env);
    ConfigParse p = parse_plugin_args({"allow_test_env=1", "scontrol=/opt/slurm/bin/scontrol"});
    CHECK(p.errors.empty());
    CHECK(p.config.allow_test_env);
    CHECK(p.config.scontrol == "/opt/slurm/bin/scontrol");
    CHECK(parse_plugin_args({"scontrol=scontrol"}).errors.size() == 1);
    CHECK(parse_plugin_args({"allow_test_env=yes"}).errors.size() == 1);
}

TEST_CASE("scontrol as root only from a root-owned path nobody else can write") {
    CHECK(check_root_owned_program("scontrol").find("not an absolute path") != std::string::npos);
    CHECK_FALSE(check_root_owned_program("/nonexistent/scontrol").empty());
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root (chown)");
        return;
    }
    CHECK(check_root_owned_program("/bin/sh") == "");
    char tmpl[] = "/tmp/stallscope-scontrol-test.XXXXXX";  // /tmp is sticky: accepted as a parent
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl, bin = dir + "/scontrol";
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    REQUIRE(write_text(bin, "#!/bin/sh\n"));
    REQUIRE(chmod(bin.c_str(), 0755) == 0);
    CHECK(check_root_owned_program(bin) == "");
    CHECK(check_root_owned_program(dir + "/../" + dir.substr(5) + "/scontrol") == "");
    REQUIRE(chmod(bin.c_str(), 0775) == 0);
    CHECK(check_root_owned_program(bin).find("writable by group or others") != std::string::npos);
    REQUIRE(chmod(bin.c_str(), 0755) == 0);
    REQUIRE(chown(bin.c_str(), kNobody, kNobody) == 0);
    CHECK(check_root_owned_program(bin).find("not owned by root") != std::string::npos);
    REQUIRE(chown(bin.c_str(), 0, 0) == 0);
    REQUIRE(chmod(dir.c_str(), 0777) == 0);  // a user could swap the binary
    CHECK(check_root_owned_program(bin).find("directory writable") != std::string::npos);
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    REQUIRE(chown(dir.c_str(), kNobody, kNobody) == 0);
    CHECK(check_root_owned_program(bin).find("directory not owned by root") != std::string::npos);
    // A symlink is followed to its target, and the target's directories are what count.
    const std::string link = dir + "/link";
    REQUIRE(chown(dir.c_str(), 0, 0) == 0);
    REQUIRE(symlink("/bin/sh", link.c_str()) == 0);
    CHECK(check_root_owned_program(link) == "");
    unlink(link.c_str());
    unlink(bin.c_str());
    rmdir(dir.c_str());
}
