// Reads one verdict.<step>.<host>.json for the job merge. The file lives in a directory the job user
// writes, so it is untrusted: regular files only (O_NOFOLLOW, O_NONBLOCK: no symlink, FIFO or device),
// at most kMaxVerdictFileBytes, parsed without exceptions and read field by field with type checks. A
// malformed file is an error naming it, never an exception. Before any document is built, the text
// passes verdict_file_bounds() (depth, GPUs, ports, reasons, values): memory stays a small multiple of
// the file and a deeply nested value cannot overflow the stack.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "libstallscope/job/node_stats.h"

namespace stallscope {

inline constexpr std::size_t kMaxVerdictFileBytes = 4u << 20;

struct VerdictFile {
    // No `timeline` path: the job writes the file, so a timeline is only ever the one next to it (same
    // <step>.<host> stem in the same directory); an admin's view never opens a path the job chose.
    std::string host, step_id, job_id, user, job_name;
    StepVerdict verdict;
    std::optional<NodeStats> stats;     // empty: written by a helper before node_stats existed
    std::vector<std::string> warnings;  // what went wrong while recording (missing NVML, unreadable files)
    std::vector<std::string> problems;  // fields of the wrong type (left empty), naming the file
};

bool read_verdict_file(const std::string& path, VerdictFile& out, std::string& error);

// A regular file of at most `max_bytes`, opened without following a symlink and without blocking.
bool read_small_regular_file(const std::string& path, std::size_t max_bytes, std::string& text,
                             std::string& error);

// The `verdict` object of a verdict file (or a timeline's verdict line), typed and non-throwing.
StepVerdict step_verdict_from_json(const Json& object, std::vector<std::string>& problems);

}  // namespace stallscope
