// The progress line of long runs (issue 14): drawn on a terminal while `report` loads recordings, erased
// before the report is printed, and not a byte of it when stderr is not a terminal.
#include <doctest/doctest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "tests/support/run_process.h"

using stallscope::test::run_process;

namespace {

const std::string kProgressJobDir =
    std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4242";  // 4 timelines

struct TerminalRun {
    int exit_code = -1;
    std::string screen;  // everything written to the terminal, in order (stdout and stderr together)
};

// Runs argv with stdin, stdout and stderr on a new pseudo-terminal, as at a person's terminal.
TerminalRun run_on_terminal(const std::vector<std::string>& argv, double timeout_seconds = 60) {
    TerminalRun run;
    int master = -1;
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    char buf[4096];
    for (;;) {
        pollfd p{master, POLLIN, 0};
        if (::poll(&p, 1, 100) < 0 && errno != EINTR) break;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            break;
        }
        if (!(p.revents & (POLLIN | POLLHUP))) continue;
        const ssize_t n = ::read(master, buf, sizeof buf);
        if (n <= 0) break;  // EIO once the child has closed its side
        run.screen.append(buf, static_cast<std::size_t>(n));
    }
    ::close(master);
    int status = 0;
    ::waitpid(pid, &status, 0);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
}

}  // namespace

TEST_CASE("report at a terminal shows a progress line while timelines replay, erased before the report") {
    const auto run = run_on_terminal({STALLSCOPE_EXE, "report", kProgressJobDir, "--jobs", "1"});
    REQUIRE(run.exit_code == 0);
    const std::string& s = run.screen;
    CHECK(s.find("0/4 recordings") != std::string::npos);  // drawn at once, whatever the machine's speed
    const std::size_t last_bar = s.rfind("4/4 recordings");
    REQUIRE(last_bar != std::string::npos);
    CHECK(s.find("ETA") != std::string::npos);
    CHECK(s.find("MiB read", 0) != std::string::npos);
    // Erased (spaces over the line) after its last drawing and before the report's first line.
    const std::size_t erased = s.find("\r" + std::string(100, ' ') + "\r", last_bar);
    const std::size_t report = s.find("Verdict:");
    REQUIRE(erased != std::string::npos);
    REQUIRE(report != std::string::npos);
    CHECK(erased < report);
    CHECK(s.find("/4 recordings", report) == std::string::npos);  // never drawn over the report
}

TEST_CASE("report and replay not at a terminal write no progress at all") {
    const auto report = run_process({STALLSCOPE_EXE, "report", kProgressJobDir});
    REQUIRE(report.exit_code == 0);
    CHECK(report.err.empty());
    const auto replay =
        run_process({STALLSCOPE_EXE, "replay", kProgressJobDir + "/timeline.0.gpu-node-01.jsonl",
                     kProgressJobDir + "/timeline.0.gpu-node-02.jsonl"});
    REQUIRE(replay.exit_code == 0);
    CHECK(replay.err.empty());
}
