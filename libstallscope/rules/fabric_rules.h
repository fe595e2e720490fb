// RDMA / RoCE fabric rules (node-health-anchors.md section 7.4). All of them judge counter deltas inside
// the step only (never lifetime totals), so they are silent on the first sample.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// fabric_congestion (SLOW): rp_cnp_handled/s >= cnp_handled_per_s, or np_ecn_marked_roce_packets /
// np_cnp_sent per second >= ecn_marked_per_s.
void rdma_congestion_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kFabricCongestion{"fabric_congestion", Category::kFabric, Label::kSlow, 31};
}  // namespace rule

// fabric_packet_loss: out_of_sequence + packet_seq_err + duplicate_request + implied_nak_seq_err per
// million received packets >= rdma_loss_slow_per_mpkt (SLOW) / rdma_loss_fail_per_mpkt (FAIL_RISK), with
// at least rdma_loss_min_events; rdma_loss_fail_per_s when the port counts no packets.
void rdma_loss_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kFabricPacketLoss{"fabric_packet_loss", Category::kFabric, Label::kSlow, 26};
}  // namespace rule

// FAIL_RISK on any delta: fabric_ack_timeout (local_ack_timeout_err, roce_adp_retrans_to),
// fabric_retry_exceeded (req_tx_retry_excd, req_transport_retries_exceeded, ...), fabric_qp_error
// (req/resp_cqe_error, remote access / invalid request / local length errors), fabric_rnr_nak
// (rnr_nak_retry_err >= rnr_nak_min_events). SLOW: host_rx_backpressure from hw out_of_buffer/s >=
// host_rx_discards_per_s (receive queue empty: the consumer on this host is slow).
void rdma_error_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kFabricAckTimeout{"fabric_ack_timeout", Category::kFabric, Label::kFailRisk,
                                                  25};
inline constexpr RuleDescriptor kFabricRetryExceeded{"fabric_retry_exceeded", Category::kFabric,
                                                     Label::kFailRisk, 24};
inline constexpr RuleDescriptor kFabricQpError{"fabric_qp_error", Category::kFabric, Label::kFailRisk, 23};
inline constexpr RuleDescriptor kFabricRnrNak{"fabric_rnr_nak", Category::kFabric, Label::kFailRisk, 27};
inline constexpr RuleDescriptor kHostRxBackpressure{"host_rx_backpressure", Category::kFabric, Label::kSlow,
                                                    29};
}  // namespace rule

// fabric_link_flap (FAIL_RISK): link_downed or link_error_recovery delta > 0 on a port, or
// link_down_events_phy delta > 0 on the netdev behind it.
void link_flap_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kFabricLinkFlap{"fabric_link_flap", Category::kFabric, Label::kFailRisk, 21};
}  // namespace rule

// fabric_cc_misconfigured (warning): rp_cnp_ignored delta > 0, i.e. CNPs arrive but congestion control
// ignores them (ECN/DCQCN disabled on this host for the RoCE priority).
void cc_misconfig_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kFabricCcMisconfigured{"fabric_cc_misconfigured", Category::kFabric,
                                                       Label::kFast, kMiddleRank};
}  // namespace rule

// Interface errors + drops per million packets >= iface_errors_per_mpkt (and >= iface_min_events):
// fabric_interface_errors (SLOW) on the netdev behind an RDMA port; on any other interface (eth0, TCP)
// network_interface_errors as info only, because TCP-only trouble is not the RDMA path. When the node
// has no RDMA port at all the Ethernet interfaces are the data path and the reason is SLOW. `lo` is skipped.
void interface_errors_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kFabricInterfaceErrors{"fabric_interface_errors", Category::kFabric,
                                                       Label::kSlow, 32};
inline constexpr RuleDescriptor kNetworkInterfaceErrors{"network_interface_errors", Category::kNetwork,
                                                        Label::kFast, kMiddleRank};
}  // namespace rule

// Port state: fabric_port_down (FAIL_RISK) when a port that was ACTIVE in this step is not, or sits in
// Polling (cable in, link not training); fabric_rail_down (SLOW) for a port down since the first sample
// while ACTIVE ports of the same link layer carry traffic (one rail of several missing, whether it went
// down before the step or not); fabric_port_inactive (info) for a port down since the first sample with
// no busy sibling (not cabled / not used); fabric_port_degraded (SLOW) when rate_gbps fell below the
// highest rate seen in the step.
class PortStateRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct PortHistory {
        bool was_active = false;
        double best_rate = 0;
    };
    std::map<std::string, PortHistory> ports_;
};
namespace rule {
inline constexpr RuleDescriptor kFabricPortDown{"fabric_port_down", Category::kFabric, Label::kFailRisk, 20};
inline constexpr RuleDescriptor kFabricRailDown{"fabric_rail_down", Category::kFabric, Label::kSlow, 20};
inline constexpr RuleDescriptor kFabricPortInactive{"fabric_port_inactive", Category::kFabric, Label::kFast,
                                                    kMiddleRank};
inline constexpr RuleDescriptor kFabricPortDegraded{"fabric_port_degraded", Category::kFabric, Label::kSlow,
                                                    22};
}  // namespace rule

// true when `iface` is the netdev behind one of the snapshot's RDMA ports.
bool is_rdma_netdev(const Snapshot& s, const std::string& iface);

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kFabricRules[] = {
    &rule::kFabricCongestion,      &rule::kFabricPacketLoss,       &rule::kFabricAckTimeout,
    &rule::kFabricRetryExceeded,   &rule::kFabricQpError,          &rule::kFabricRnrNak,
    &rule::kHostRxBackpressure,    &rule::kFabricLinkFlap,         &rule::kFabricCcMisconfigured,
    &rule::kFabricInterfaceErrors, &rule::kNetworkInterfaceErrors, &rule::kFabricPortDown,
    &rule::kFabricRailDown,        &rule::kFabricPortInactive,     &rule::kFabricPortDegraded,
};

}  // namespace stallscope
