// Runs a program (no shell: fork + execvp) and collects its stdout through a pipe, with a deadline and
// an output cap, so a wedged driver tool (nvidia-smi in D-state after Xid 79, node-health-anchors.md
// section 9.2) costs at most `timeout` and `max_output_bytes`.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace stallscope {

struct CommandResult {
    bool started = false;    // exec succeeded
    bool timed_out = false;  // killed (SIGKILL) at the deadline
    bool truncated = false;  // killed because stdout exceeded max_output_bytes
    int exit_status = -1;    // exit code when it exited, -1 otherwise
    int term_signal = 0;     // the signal that ended it, 0 otherwise
    std::string output;      // stdout (stderr goes to /dev/null)
    std::string error;       // why it did not start or run to completion, "" on a clean exit 0
    bool ok() const { return started && !timed_out && !truncated && exit_status == 0; }
};

// argv[0] is looked up on PATH unless it contains a '/'. The child gets stdin from /dev/null, an
// unblocked signal mask and no inherited fds beyond 0-2.
CommandResult run_bounded_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                  std::size_t max_output_bytes);

}  // namespace stallscope
