// Which `ethtool -S` statistics stallscope keeps, and a parser for the `ethtool -S` text format used by
// fixtures (STALLSCOPE_ETHTOOL_ROOT/<iface>). No I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

// True for the PFC / pause / backpressure / buffer-drop statistics (node-health-anchors.md section 7.3):
//   *pause* (rx_pause_ctrl_phy, tx_prio3_pause, rx_prio3_pause_duration, rx_prio3_pause_transition,
//            rx_global_pause, tx_pause_storm_warning_events, tx_pause_storm_error_events, ...)
//   *pfc*, *xoff*, *xon* (the same on bnxt / ice / i40e: tx_pfc_ena_frames_pri3, link_xoff_rx, ...)
//   *discard* (rx_discards_phy, tx_discards_phy, rx_prio3_discards, rx_prio3_buf_discard, _cong_discard)
//   *out_of_buffer (rx_out_of_buffer, dev_out_of_buffer), rx_prio<N>_marked (ECN marked),
//   rx_buffer_passed_thres_phy, outbound_pci_stalled_{rd,wr}[_events], outbound_pci_buffer_overflow.
// mlx5 exposes ~670 statistics per netdev; the rest (per-queue, PHY/FEC, bytes/packets) are not kept.
bool is_backpressure_stat(std::string_view name);

// `ethtool -S <iface>` output:
//   NIC statistics:
//        rx_pause_ctrl_phy: 123
// Returns the backpressure fields only (is_backpressure_stat); a kept field whose value is garbage is null
// with one warning "<file>: <field>: <why>"; a line that is not "name: value" is one warning too.
CounterMap parse_ethtool_stats_text(std::string_view text, std::string_view file,
                                    std::vector<std::string>& warnings);

}  // namespace stallscope
