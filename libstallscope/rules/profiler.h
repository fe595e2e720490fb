// The profiler: runs every rule on each sample (per-sample Profile) and folds the samples into the
// whole-step verdict. One instance per step and node; live recording and replay use the same code path.
#pragma once

#include <optional>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/rates_tracker.h"
#include "libstallscope/model/snapshot.h"
#include "libstallscope/rules/fabric_rules.h"
#include "libstallscope/rules/gpm_rules.h"
#include "libstallscope/rules/gpu_window_rules.h"
#include "libstallscope/rules/host_rules.h"
#include "libstallscope/rules/nccl_rules.h"
#include "libstallscope/rules/pfc_rules.h"
#include "libstallscope/rules/thresholds.h"
#include "libstallscope/rules/verdict.h"

namespace stallscope {

class Profiler {
  public:
    explicit Profiler(Thresholds t = {});

    // Profiles one sample. Rates are computed against the previously observed sample (its counters are
    // kept, not the sample: RatesTracker); delta rules apply from the second sample on (the first sample
    // says so in an info reason). observe() also keeps the sample itself for last_sample(): pass it as an
    // rvalue to have it moved there rather than deep-copied (thousands of counters on a big node); the
    // rvalue is then left holding the previous sample (nothing on the first call), whose counter maps
    // Sampler::sample(Snapshot&&) reuses.
    // observe_view() keeps nothing of the sample but its counters: for a caller that holds the sample
    // anyway (replay of a v2 timeline, whose reader lends one it updates in place); last_sample() is
    // nullptr after it. All three give the same profiles and verdict.
    Profile observe(const Snapshot& s);
    Profile observe(Snapshot&& s);
    Profile observe_view(const Snapshot& s);
    // observe_view for a caller that keeps only the step verdict (replay): the same verdict, without
    // building the sample's Profile (its reasons moved out of the findings and ordered, every sample).
    // `shape`: the lender's promise about `s` (snapshot.h), which lets the rates skip their walk.
    void observe_view_for_verdict(const Snapshot& s, SnapshotShape shape = {});
    const Snapshot* last_sample() const;  // the sample last observed and kept; nullptr before the first
    const Rates* last_rates() const;      // nullptr before the 2nd sample
    StepVerdict verdict() const;          // whole-step verdict over everything observed so far
    const Thresholds& thresholds() const { return t_; }

  private:
    void run_rules(const RuleInput& in, Findings& out);
    // observe() without keeping `s`: the sample judged and fed to the verdict, and its Profile written
    // into `out` (reasons ordered) unless it is nullptr (replay's verdict-only pass).
    void profile(const Snapshot& s, SnapshotShape shape, Profile* out);

    Thresholds t_;
    std::optional<Snapshot> last_;  // kept by observe(), not by observe_view()
    RatesTracker rates_;
    // Rules that keep a window of history.
    PortStateRule port_state_;
    PfcRule pfc_;
    HwSlowdownRule hw_slowdown_;
    ThermalThrottleRule thermal_;
    BusyWaitHangRule hang_;
    IdleGpuRule idle_;
    StragglerRule straggler_;
    ForeignProcessRule foreign_;
    BlockedProcessesRule blocked_;
    StaleTelemetryRule stale_;
    NcclHangRule nccl_hang_;
    NcclMissingRankRule nccl_missing_;
    NcclPeerNames peer_names_;
    NcclInspectorRule nccl_inspector_;
    VerdictAccumulator verdict_;
    Findings findings_;            // this sample's, reused: its capacity is kept between samples
    std::vector<PortRows> ports_;  // this sample's RDMA ports and their rows, for the fabric rules
    EntityRows rows_;              // this sample's GPUs', interfaces' and host's rows
    GpuSlots gpu_slots_;           // the rules' per-GPU state: one number per GPU key
    // What ports_, rows_ and gpu_slots_ were resolved for: the lender's shape, its sample, the Rates and
    // the tracker's rebuild count (profile()).
    struct RowsKey {
        std::uint64_t shape = 0;
        const Snapshot* sample = nullptr;
        const Rates* rates = nullptr;
        std::uint64_t rebuilds = 0;
        bool operator==(const RowsKey&) const = default;
    };
    RowsKey rows_key_;
};

namespace rule {
// delta_rules_pending (info, FAST): the first sample, whose lifetime counters no delta rule can judge yet.
inline constexpr RuleDescriptor kDeltaRulesPending{"delta_rules_pending", Category::kProfiler, Label::kFast,
                                                   kMiddleRank};
}  // namespace rule
inline constexpr const RuleDescriptor* kProfilerRules[] = {&rule::kDeltaRulesPending};

}  // namespace stallscope
