// NCCL / RCCL part of a Snapshot: what the RAS service, the Inspector plugin, the NCCL/PyTorch logs and
// an nccl-tests smoke run said during one sample. Plain data; parsers live in libstallscope/sources/nccl,
// judgement in libstallscope/rules/nccl_rules. Formats: shared/research/nccl-rccl-observability.md.
//
// Everything here is *per sample*: a RAS report appears only in the sample in which a poll finished,
// Inspector statistics cover the records read since the previous sample, log events are the new lines.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

// A process (RAS peer) or rank location. RAS prints IP addresses of the OOB interface, not hostnames.
struct NcclPeer {
    int rank = -1;  // -1 for job-level process entries
    std::string host;
    std::int64_t pid = -1;
    std::string gpus;  // CUDA device(s) as RAS prints them ("5", "0,1")
    bool operator==(const NcclPeer&) const = default;
};

struct NcclMissingRank {
    NcclPeer peer;
    bool considered_dead = false;  // unreachable for 60 s x NCCL_RAS_TIMEOUT_FACTOR
    bool unresponsive = false;     // did not answer this collection
    bool operator==(const NcclMissingRank&) const = default;
};

struct NcclRankError {
    NcclPeer peer;
    std::string error;    // "Remote process error", "ABORT", "init_state 3", ...
    int async_error = 0;  // ncclResult_t, 0 when unknown/none
    bool abort = false;
    bool operator==(const NcclRankError&) const = default;
};

// One collective function whose launch counts differ between the ranks of a communicator.
struct NcclCountMismatch {
    std::string function;  // AllReduce | AllGather | ... | "collective" (2.24/2.25 summed counts)
    std::uint64_t max_count = 0;
    std::vector<std::pair<int, std::uint64_t>> laggards;  // (rank, count) for ranks below max_count
    int unlisted_laggards = 0;  // behind, but RAS did not itemise them (text majority group)
    bool operator==(const NcclCountMismatch&) const = default;
};

struct NcclCommunicator {
    std::string hash;  // 16 hex digits, zero-padded, no 0x (RAS text form; JSON/Inspector normalised)
    int size = 0;      // ranks in the communicator
    int ranks_answered = 0;
    std::string status;  // highest rank status: RUNNING | INIT | FINALIZE | ABORT | NOCOMM
    std::vector<NcclMissingRank> missing;
    std::vector<NcclRankError> errors;
    std::vector<NcclCountMismatch> mismatches;
    std::map<std::string, std::uint64_t> max_counts;  // per function, JSON only: progress between polls
    bool operator==(const NcclCommunicator&) const = default;
};

// One answer of `STATUS` (text or JSON), or why there was none.
struct NcclRasReport {
    double time = 0;           // when the poll finished (helper clock)
    std::string outcome;       // ok | refused | timeout | truncated | protocol_error | parse_error
    std::string detail;        // human text for a failed poll
    std::string format;        // json | text
    std::string nccl_version;  // "2.30.7"; RCCL reports are prefixed "rccl-"
    bool partial = false;      // report cut before its end (server crash or client deadline)
    double collection_seconds = 0;
    int timeouts = 0;  // RAS-internal communication timeouts while collecting
    int communicators_count = 0;
    std::vector<NcclPeer> dead_processes;         // job-level DEAD block (text) / considered_dead (JSON)
    std::vector<NcclPeer> missing_processes;      // job-level INCOMPLETE block (text)
    std::vector<NcclCommunicator> communicators;  // JSON: all; text: the ones named in Errors/Warnings
    bool operator==(const NcclRasReport&) const = default;
};

// One MONITOR event (NCCL >= 2.29): PEER_DEAD, PEER_UNRESPONSIVE, ...
struct NcclRasEvent {
    std::string timestamp;  // as RAS printed it ("2026-07-14 09:22:05", local time of the server)
    std::string group;      // LIFECYCLE | TRACE ("" for text events, where the group is not printed)
    std::string event;
    NcclPeer peer;
    std::string details;
    bool operator==(const NcclRasEvent&) const = default;
};

// Inspector records of one (communicator, collective, message size, rank) read in this sample.
struct NcclCollectiveStats {
    std::string comm;  // normalised hash
    std::string coll;  // AllReduce, AllGather, ... or Send/Recv for p2p
    std::uint64_t msg_size_bytes = 0;
    int rank = -1;
    int n_ranks = 0;
    std::string host;
    int records = 0;
    double median_busbw_gbs = 0;
    double median_exec_us = 0;
    bool operator==(const NcclCollectiveStats&) const = default;
};

// A rank that arrived last (shortest kernel time while its peers waited) in most instances of a
// collective joined across ranks on (comm, coll, coll_sn), over the source's sliding window.
struct NcclStraggler {
    std::string comm, coll;
    int rank = -1;
    std::string host;
    int instances = 0;  // joined instances with a significant arrival skew in the window
    int late = 0;       // of those, how many this rank arrived last
    double median_skew_us = 0;
    bool operator==(const NcclStraggler&) const = default;
};

struct NcclInspector {
    std::vector<NcclCollectiveStats> collectives;
    std::vector<NcclStraggler> stragglers;
    bool operator==(const NcclInspector&) const = default;
};

// A line from an NCCL debug file or a PyTorch log that matters (research notes section 5.4).
struct NcclLogEvent {
    std::string kind;  // ib_wc_error | ib_async | pt_watchdog_timeout | pt_watchdog_status |
                       // pt_heartbeat | nccl_error | nccl_warn
    std::string file;
    std::string host;
    int rank = -1;
    std::int64_t pid = -1;
    std::map<std::string, std::string> fields;  // peer, status, op, seq, timeout_ms, ...
    std::string line;                           // the matched line, cut to 400 bytes
    bool operator==(const NcclLogEvent&) const = default;
};

// `--nccl-test`: one all_reduce_perf run.
struct NcclTestResult {
    std::string outcome;  // ok | not_found | timeout | nccl_error | cuda_error | wrong_data |
                          // usage_error | failed | garbage
    int exit_code = -1;
    std::string command;
    double seconds = 0;
    std::optional<double> avg_busbw_gbs;   // "# Avg bus bandwidth" footer / average_bus_bandwidth
    std::optional<double> peak_busbw_gbs;  // best busbw of any row (largest sizes saturate the fabric)
    std::optional<std::uint64_t> peak_size_bytes;
    std::optional<std::uint64_t> wrong;  // sum of #wrong over rows (null when -c 0 prints N/A)
    int rows = 0;
    std::vector<std::string> errors;  // "Test NCCL failure ..." lines
    bool operator==(const NcclTestResult&) const = default;
};

struct NcclState {
    std::vector<NcclRasReport> ras;  // 0 or 1 poll result finished in this sample
    std::vector<NcclRasEvent> ras_events;
    NcclInspector inspector;
    std::vector<NcclLogEvent> log_events;
    std::optional<NcclTestResult> nccl_test;
    bool empty() const {
        return ras.empty() && ras_events.empty() && inspector.collectives.empty() &&
               inspector.stragglers.empty() && log_events.empty() && !nccl_test;
    }
    bool operator==(const NcclState&) const = default;
};

}  // namespace stallscope
