// NCCL / RCCL rules (category "nccl"): RAS reports and MONITOR events, Inspector statistics, log events,
// and the nccl-tests smoke run of Snapshot::nccl. Evidence semantics: research notes 1.9, 2.8, 5.4.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// Names RAS peers, which RAS reports by the IP address of their out-of-band interface, by host name
// from what the samples tell: NCCL/PyTorch log lines (host + pid) and Inspector records (communicator +
// rank + host). A peer is named when its pid or its (communicator, rank) was seen with a host name; its
// IP then names every other process on that host. No DNS lookups: a replay must give the same verdict.
class NcclPeerNames {
  public:
    void learn(const Snapshot& s);
    // The host name of `p` (a rank of `comm`, or "" for job-level processes), or "" when unknown.
    std::string host_of(const NcclPeer& p, const std::string& comm = "") const;

  private:
    void learn_peer(const NcclPeer& p, const std::string& comm);
    std::map<std::int64_t, std::string> pid_host_;
    std::map<std::pair<std::string, int>, std::string> rank_host_;
    std::map<std::string, std::string> ip_host_;
};

// nccl_rank_dead (FAIL_RISK): a RAS DEAD process / considered_dead missing rank, or a MONITOR PEER_DEAD
// event. nccl_async_error (FAIL_RISK): ranks with an asynchronous/initialisation error or an aborted
// communicator. An unanswered rank of one poll is not a finding here: NcclMissingRankRule waits for two.
void nccl_ras_failure_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kNcclRankDead{"nccl_rank_dead", Category::kNccl, Label::kFailRisk,
                                              kMiddleRank};
inline constexpr RuleDescriptor kNcclAsyncError{"nccl_async_error", Category::kNccl, Label::kFailRisk,
                                                kMiddleRank};
}  // namespace rule

// nccl_rank_missing (FAIL_RISK): the same rank(s) of a communicator did not answer the RAS status
// collection (INCOMPLETE) in >= 2 consecutive successful polls. One unanswered poll is a rank busy in a
// long kernel or slow to reply, not yet a hung process.
class NcclMissingRankRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Missing {
        std::map<int, int> polls;     // rank -> consecutive polls it was missing in
        std::map<int, double> since;  // rank -> time of the first of those polls
    };
    std::map<std::string, Missing> missing_;  // comm hash -> ranks missing at the last successful poll
};
namespace rule {
inline constexpr RuleDescriptor kNcclRankMissing{"nccl_rank_missing", Category::kNccl, Label::kFailRisk,
                                                 kMiddleRank};
}  // namespace rule

// From the log scan: nccl_ib_completion_error (IB/RoCE work completion error, e.g. status=12 retry
// exceeded), nccl_ib_async_fatal, nccl_watchdog_timeout (PyTorch collective timeout), nccl_watchdog_stuck
// (heartbeat monitor), nccl_error (NCCL error surfaced to the framework): all FAIL_RISK.
void nccl_log_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kNcclIbCompletionError{"nccl_ib_completion_error", Category::kNccl,
                                                       Label::kFailRisk, kMiddleRank};
inline constexpr RuleDescriptor kNcclIbAsyncFatal{"nccl_ib_async_fatal", Category::kNccl, Label::kFailRisk,
                                                  kMiddleRank};
inline constexpr RuleDescriptor kNcclWatchdogTimeout{"nccl_watchdog_timeout", Category::kNccl,
                                                     Label::kFailRisk, kMiddleRank};
inline constexpr RuleDescriptor kNcclWatchdogStuck{"nccl_watchdog_stuck", Category::kNccl, Label::kFailRisk,
                                                   kMiddleRank};
inline constexpr RuleDescriptor kNcclError{"nccl_error", Category::kNccl, Label::kFailRisk, kMiddleRank};
}  // namespace rule

// nccl_test_failed (FAIL_RISK) when the all_reduce_perf smoke run failed (exit code mapped to a reason,
// #wrong > 0); nccl_test_result (info) with its bus bandwidth when it passed.
void nccl_test_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kNcclTestFailed{"nccl_test_failed", Category::kNccl, Label::kFailRisk,
                                                kMiddleRank};
inline constexpr RuleDescriptor kNcclTestResult{"nccl_test_result", Category::kNccl, Label::kFast,
                                                kMiddleRank};
}  // namespace rule

// nccl_collective_hang (FAIL_RISK): the same ranks stay behind on the same collective launch count
// across RAS polls, without progress, for nccl_hang_min_seconds. The lagging ranks have not launched the
// next collective (stuck in compute, data loading, a dead GPU or host); the others wait inside it. A
// mismatch that clears on the next poll is normal and never fires.
class NcclHangRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Lag {
        std::vector<std::pair<int, std::uint64_t>> laggards;
        int unlisted = 0;
        std::uint64_t max_count = 0;
        double since = 0;
        int polls = 0;
    };
    std::map<std::string, Lag> lags_;  // comm hash + '/' + function
};
namespace rule {
inline constexpr RuleDescriptor kNcclCollectiveHang{"nccl_collective_hang", Category::kNccl, Label::kFailRisk,
                                                    kMiddleRank};
}  // namespace rule

// nccl_straggler_rank (SLOW): the Inspector join names a rank that arrived last in at least
// nccl_straggler_min_share of >= nccl_straggler_min_instances collective instances.
// nccl_busbw_drop (SLOW): the median bus bandwidth of a (communicator, collective, message size) fell
// nccl_busbw_drop_pct below the best median seen earlier in the step.
class NcclInspectorRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    std::map<std::string, double> best_busbw_;
};
namespace rule {
inline constexpr RuleDescriptor kNcclStragglerRank{"nccl_straggler_rank", Category::kNccl, Label::kSlow,
                                                   kMiddleRank};
inline constexpr RuleDescriptor kNcclBusbwDrop{"nccl_busbw_drop", Category::kNccl, Label::kSlow, kMiddleRank};
}  // namespace rule

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kNcclRules[] = {
    &rule::kNcclRankDead,          &rule::kNcclAsyncError,     &rule::kNcclRankMissing,
    &rule::kNcclIbCompletionError, &rule::kNcclIbAsyncFatal,   &rule::kNcclWatchdogTimeout,
    &rule::kNcclWatchdogStuck,     &rule::kNcclError,          &rule::kNcclTestFailed,
    &rule::kNcclTestResult,        &rule::kNcclCollectiveHang, &rule::kNcclStragglerRank,
    &rule::kNcclBusbwDrop,
};

}  // namespace stallscope
