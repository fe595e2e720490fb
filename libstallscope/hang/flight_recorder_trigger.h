// Asking PyTorch's flight recorder for a dump without touching the rank: ProcessGroupNCCL's monitor thread
// (global rank r, process group uid 0) creates the FIFO `<TORCH_NCCL_DEBUG_INFO_PIPE_FILE>r.pipe` and reads
// it O_NONBLOCK about once a second; any byte read starts an asynchronous dump to
// `<TORCH_NCCL_DEBUG_INFO_TEMP_FILE>r` (TORCH_FR_DUMP_TEMP_FILE on newer releases), and training goes on.
// We open the FIFO O_WRONLY|O_NONBLOCK: with no reader the open fails with ENXIO at once ("no flight
// recorder"); nothing here can block or signal the rank.
#pragma once

#include <atomic>
#include <cstddef>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/hang/flight_recorder.h"

namespace stallscope {

struct FlightRecorderPaths {
    std::string pipe_prefix;  // TORCH_NCCL_DEBUG_INFO_PIPE_FILE (XCCL: TORCH_FR_DEBUG_INFO_PIPE_FILE)
    std::string dump_prefix;  // TORCH_FR_DUMP_TEMP_FILE, else TORCH_NCCL_DEBUG_INFO_TEMP_FILE
    bool buffer_off = false;  // the job set TORCH_FR_BUFFER_SIZE / TORCH_NCCL_TRACE_BUFFER_SIZE to 0
};
// From a job process's exec-time environment (NUL-separated).
FlightRecorderPaths flight_recorder_paths_from_environ(std::string_view environ_block);

// One FIFO asked: outcome is "requested", "no_reader" (ENXIO: nobody holds it open), "pipe_full"
// (EAGAIN: the monitor thread is not reading), "not_a_fifo", or "error: <strerror>".
struct DumpRequest {
    int rank = -1;
    std::string pipe, outcome;
};

// The FIFOs `<pipe_prefix><rank>.pipe` in the prefix's directory, each asked once (at most max_pipes).
std::vector<DumpRequest> request_dumps(const std::string& pipe_prefix, std::size_t max_pipes = 64);

// One dump file read back: outcome "read", "not_parsed_cpu_budget", "timeout" (no new dump in time),
// "unreadable", "too_large", "parse_error: ...". raw is kept (for torchfrtrace) for the first two.
struct DumpRead {
    int rank = -1;
    std::string path, outcome;
    std::string raw;
    FlightRecorderDump summary;
    std::vector<std::string> warnings;
};

struct DumpWait {
    timespec requested_at{};            // CLOCK_REALTIME at the request: older files are earlier dumps
    double deadline_seconds = 55;       // from the call
    std::size_t max_bytes = 64u << 20;  // all dumps together
    const std::atomic<bool>* cancel = nullptr;  // checked every poll
    // The calling thread's CPU seconds (CLOCK_THREAD_CPUTIME_ID) past which a dump is copied but no
    // longer parsed (outcome "not_parsed_cpu_budget"): parsing is what costs CPU, ~30 ms per MiB.
    double cpu_limit_seconds = 1e9;
    double poll_seconds = 0.1;
};

// Polls `<dump_prefix><rank>` for every rank until each holds a complete dump newer than the request
// (size unchanged over one poll and parses) or the deadline passes. Bounded in time and bytes.
// The calling thread's CPU time so far.
double thread_cpu_seconds();

std::vector<DumpRead> wait_for_dumps(const std::string& dump_prefix, const std::vector<int>& ranks,
                                     const DumpWait& wait);

}  // namespace stallscope
