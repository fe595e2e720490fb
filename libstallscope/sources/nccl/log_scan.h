// NCCL debug output and PyTorch ProcessGroupNCCL logs: the lines that precede hangs and crashes (IB
// completion errors, watchdog timeouts, ...) as structured events (research notes 5.1-5.4).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/nccl.h"
#include "libstallscope/sources/nccl/tail_file.h"

namespace stallscope::nccl {

// Classifies one log line; false for lines that matter to no rule. Fills kind, host, pid, rank, fields.
bool classify_log_line(std::string_view line, NcclLogEvent& event);

// NCCL_DEBUG_FILE with %h (host) and %p (pid) expanded to a glob: "/d/nccl.%h.%p.log" ->
// "/d/nccl.node1.*.log".
std::string debug_file_glob(std::string_view pattern, const std::string& host);

// Comma-separated paths/globs (STALLSCOPE_NCCL_LOGS) -> list.
std::vector<std::string> split_paths(std::string_view list);

struct LogScanLimits {
    std::size_t backlog = 1u << 20;           // first sight of a file: its last MiB
    std::size_t bytes_per_file = 256u << 10;  // per sample
    std::size_t bytes_total = 2u << 20;       // per sample, all files
    std::size_t max_files = 256;
    std::size_t max_events = 100;  // per sample; the rest are counted in a warning
};

class LogScanner {
  public:
    LogScanner(std::vector<std::string> globs, LogScanLimits limits = {});
    // New events since the previous call; problems (unreadable file, events dropped) go to `warnings`.
    std::vector<NcclLogEvent> scan(std::vector<std::string>& warnings);
    bool empty() const { return globs_.empty(); }

  private:
    std::vector<std::string> globs_;
    LogScanLimits limits_;
    std::map<std::string, std::unique_ptr<TailFile>> files_;
    std::map<std::string, std::string> reported_;  // path -> last error warned about
};

}  // namespace stallscope::nccl
