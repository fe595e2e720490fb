// One bounded sacct run for `jobs` and `compare JOBID`: stdout and stderr both captured, because sacct's
// own message ("fatal: Could not establish a configuration source") is what the user needs to see.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace stallscope::cli {

struct SacctResult {
    bool ok = false;    // ran and exited 0
    std::string out;    // stdout
    std::string error;  // why not: sacct's last stderr line, or the exec/timeout failure
};

// No shell; argv[0] looked up on PATH; killed after `timeout`; stdout capped at `max_bytes`.
SacctResult run_sacct(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      std::size_t max_bytes = 64u << 20);

// A sacct field delimiter no job field can contain by accident or by design: random, per call.
std::string unguessable_delimiter();

// --since for `jobs` and `nodes`: sacct's --starttime forms (sacct(1) "TIME FORMATS"); anything else throws
// UsageError here instead of sacct's silent fallback to its default window.
void check_sacct_since(const std::string& since);

}  // namespace stallscope::cli
