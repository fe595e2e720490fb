// NCCL Inspector profiler plugin output (NCCL >= 2.28.3; RCCL port): compact JSONL, one record per
// completed collective or p2p op, files `<dump dir>/<hostname>-pid<pid>.log` (research notes 2.3-2.8).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "libstallscope/model/nccl.h"

namespace stallscope::nccl {

struct InspectorRecord {
    std::string comm;  // normalised hash (== RAS hash)
    std::string coll;  // AllReduce | ... | Send | Recv
    bool p2p = false;
    std::uint64_t sn = 0;  // coll_sn / p2p_sn: per (comm, function) sequence number
    std::uint64_t msg_size_bytes = 0;
    double exec_us = 0;
    std::optional<double> busbw_gbs;  // absent when the writer printed "nan"
    int rank = -1, n_ranks = 0;
    std::string host;
    std::int64_t pid = -1;
};

// One JSONL line. nullopt with `why` for garbage, a torn line, or an output format other than v4.x
// (the schema is announced to change: research notes 2.1, NVIDIA/nccl PR #2359).
std::optional<InspectorRecord> parse_inspector_line(std::string_view line, std::string& why);

// `<host>-pid<pid>.log`: the Inspector's JSON file name.
bool is_inspector_file_name(std::string_view name);

// Folds records into per-sample statistics and a sliding-window straggler estimate.
//
// Straggler logic (research notes 2.8): records of the same collective instance are joined across ranks
// on (comm, coll, coll_sn). In a synchronising collective the rank that arrives last shows the *shortest*
// kernel time, because its peers already wait inside the kernel; max-min exec time is the arrival skew.
// A rank that is the late arriver in most instances with a significant skew is the straggler. One low
// sample is not enough: the window holds the last `window` significant instances per (comm, coll).
class InspectorAggregator {
  public:
    explicit InspectorAggregator(std::size_t window = 64) : window_(window) {}
    void add(const InspectorRecord& record);
    // Statistics of the records added since the previous call, plus the current stragglers.
    NcclInspector take_sample();

    // An instance counts when (max-min)/max exec time >= this (kernel jitter is a few percent).
    static constexpr double kSignificantSkew = 0.2;

  private:
    using StatKey = std::tuple<std::string, std::string, std::uint64_t, int>;  // comm, coll, size, rank
    using InstanceKey = std::tuple<std::string, std::string, std::uint64_t>;   // comm, coll, sn
    struct Pending {
        std::map<int, double> exec_by_rank;
        int n_ranks = 0;
        int age = 0;  // samples since first seen
    };
    struct Late {
        int rank;
        double skew_us;
    };
    void close_instance(const InstanceKey& key, const Pending& p);

    std::size_t window_;
    struct Acc {
        std::vector<double> busbw, exec;
        int records = 0, n_ranks = 0;
        std::string host;
    };
    std::map<StatKey, Acc> stats_;
    std::map<std::pair<std::string, int>, std::string> rank_host_;  // (comm, rank) -> hostname
    std::map<InstanceKey, Pending> pending_;
    std::map<std::pair<std::string, std::string>, std::deque<Late>> late_;
};

}  // namespace stallscope::nccl
