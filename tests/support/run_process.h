// Runs a program for a test (fork + execve, no shell) and captures stdout/stderr, with a deadline so a
// hung binary fails the test instead of hanging CI.
#pragma once

#include <string>
#include <vector>

namespace stallscope::test {

struct ProcessResult {
    int exit_code = -1;  // -1 when killed by a signal or not started
    int signal = 0;
    std::string out, err;
    double seconds = 0;
};

// `env` entries are added to (or override) the current environment. `extra_fd_3`, when >= 0, becomes
// fd 3 in the child (the helper's liveness pipe).
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                          double timeout_seconds = 60, int extra_fd_3 = -1);

// Starts a program in the background; returns its pid (stdout/stderr to /dev/null).
int start_process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                  int extra_fd_3 = -1);
// Waits up to `timeout_seconds` for `pid`; returns its exit code, or -1 (then it was SIGKILLed).
int wait_process(int pid, double timeout_seconds);

// A fresh directory under /tmp, removed by nobody (tests leave it for post-mortems).
std::string make_temp_dir(const char* tag);

}  // namespace stallscope::test
