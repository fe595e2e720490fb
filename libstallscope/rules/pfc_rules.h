// PFC pause rules on the ethtool counters of an interface (mlx5 counters.rst, node-health-anchors 7.3).
// Direction tells where the backpressure comes from:
//   rx pauses (the switch XOFFed us)                      -> pfc_fabric_backpressure (SLOW, the fabric)
//   tx pauses / rx_discards_phy / rx/dev_out_of_buffer    -> host_rx_backpressure (SLOW, this host)
//   tx_pause_storm_warning/error_events                   -> pfc_pause_storm (FAIL_RISK)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// What one interval of pause counters says about one direction of one interface.
struct PauseDirection {
    std::optional<double>
        occupancy_pct;  // max over priorities of paused-us / interval-us; nullopt: no duration
    std::optional<double>
        frames_per_s;            // pause frames per second (largest of per-prio sum, global, ctrl_phy)
    std::string worst_priority;  // "prio3", "global", ...
};
// direction: "rx" or "tx". Reads only the interface's deltas in `rates`.
PauseDirection pause_direction(const Rates& rates, const std::string& iface, const char* direction);

// Thresholds: pfc_rx_pause_occupancy_pct, pfc_tx_pause_occupancy_pct, pfc_pause_frames_per_s (with
// pfc_sustained_intervals consecutive intervals when the NIC has no duration counter),
// host_rx_discards_per_s. A storm supersedes the tx-side backpressure reason of the same interface.
class PfcRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Streak {
        int rx = 0, tx = 0;  // consecutive intervals above the frame-rate threshold
    };
    std::map<std::string, Streak> streaks_;
};
namespace rule {
inline constexpr RuleDescriptor kPfcFabricBackpressure{"pfc_fabric_backpressure", Category::kFabric,
                                                       Label::kSlow, 30};
inline constexpr RuleDescriptor kPfcPauseStorm{"pfc_pause_storm", Category::kFabric, Label::kFailRisk, 28};
}  // namespace rule

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kPfcRules[] = {
    &rule::kPfcFabricBackpressure,
    &rule::kPfcPauseStorm,
};

}  // namespace stallscope
