// Network (/proc/net/dev, ethtool PFC) and RDMA families of the Prometheus textfile sink.
// Only fixed allow-lists of ethtool/sysfs counters are exported: mlx5 alone has ~670 ethtool stats per
// device and node_exporter users saw 57 % of all series come from them (node-health-anchors.md 4.3).
#include <string>
#include <vector>

#include "libstallscope/sinks/prometheus_families.h"

namespace stallscope::textfile {

namespace {

struct NetdevCounter {
    const char* name;
    const char* help;
    Counter NetInterface::*field;
};

const NetdevCounter kNetdev[] = {
    {"stallscope_network_receive_bytes_total", "Bytes received (/proc/net/dev).", &NetInterface::rx_bytes},
    {"stallscope_network_receive_packets_total", "Packets received (/proc/net/dev).",
     &NetInterface::rx_packets},
    {"stallscope_network_receive_errors_total", "Receive errors (/proc/net/dev).", &NetInterface::rx_errors},
    {"stallscope_network_receive_drops_total", "Received packets dropped (/proc/net/dev).",
     &NetInterface::rx_dropped},
    {"stallscope_network_transmit_bytes_total", "Bytes transmitted (/proc/net/dev).",
     &NetInterface::tx_bytes},
    {"stallscope_network_transmit_packets_total", "Packets transmitted (/proc/net/dev).",
     &NetInterface::tx_packets},
    {"stallscope_network_transmit_errors_total", "Transmit errors (/proc/net/dev).",
     &NetInterface::tx_errors},
    {"stallscope_network_transmit_drops_total", "Transmitted packets dropped (/proc/net/dev).",
     &NetInterface::tx_dropped},
};

// ethtool -S names (mlx5 counters.rst) for drops, buffer pressure, PCIe stalls and PHY health.
const std::string kEthtoolAllowList[] = {
    "rx_discards_phy",
    "tx_discards_phy",
    "rx_out_of_buffer",
    "rx_buffer_passed_thres_phy",
    "outbound_pci_buffer_overflow",
    "outbound_pci_stalled_rd_events",
    "outbound_pci_stalled_wr_events",
    "link_down_events_phy",
    "rx_pcs_symbol_err_phy",
    "rx_crc_errors_phy",
};

// IBA PMA port counters that matter for link health and congestion (node-health-anchors.md 7.2).
const std::string kPortCounterAllowList[] = {
    "port_rcv_packets",
    "port_xmit_packets",
    "port_xmit_wait",
    "port_xmit_discards",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_rcv_constraint_errors",
    "port_xmit_constraint_errors",
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
};

// mlx5 hw_counters: congestion (ECN/CNP), loss/retransmit, receiver-not-ready, fatal QP errors (7.1).
const std::string kHwCounterAllowList[] = {
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "roce_slow_restart",
    "out_of_sequence",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "duplicate_request",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "rx_icrc_encapsulated",
    "out_of_buffer",
    "rnr_nak_retry_err",
    "req_cqe_error",
    "resp_cqe_error",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "req_remote_invalid_request",
    "resp_local_length_error",
};

// One (direction, priority) pause stream: candidate ethtool names, first valid one wins, so a NIC that
// exposes both `rx_global_pause` and `rx_pause` still gives one series.
struct PauseStream {
    const char* direction;
    std::string priority;
    std::vector<std::string> frames, duration_us;
};

const std::vector<PauseStream>& pause_streams() {
    static const std::vector<PauseStream> streams = [] {
        std::vector<PauseStream> out;
        for (const char* dir : {"rx", "tx"}) {
            const std::string d = dir;
            for (int p = 0; p < 8; ++p) {
                const std::string prio = d + "_prio" + std::to_string(p) + "_pause";
                out.push_back({dir, std::to_string(p), {prio}, {prio + "_duration"}});
            }
            out.push_back({dir,
                           "global",
                           {d + "_global_pause", d + "_pause", d + "_pause_frames"},
                           {d + "_global_pause_duration", d + "_pause_duration"}});
        }
        return out;
    }();
    return streams;
}

const Counter* first_valid(const CounterMap& map, const std::vector<std::string>& names) {
    for (const std::string& name : names) {
        auto it = map.find(name);
        if (it != map.end() && it->second) return &it->second;
    }
    return nullptr;
}

const Counter* valid(const CounterMap& map, const std::string& name) {
    auto it = map.find(name);
    return it != map.end() && it->second ? &it->second : nullptr;
}

}  // namespace

void write_network_families(ExpositionWriter& w, const Entities& e) {
    for (const NetdevCounter& m : kNetdev) {
        w.family(m.name, MetricType::counter, m.help);
        for (const NetInterface* i : e.interfaces) {
            if (const Counter& c = i->*m.field) w.sample(m.name, {{"interface", i->name}}, *c);
        }
    }
    w.family("stallscope_network_pause_frames_total", MetricType::counter,
             "PFC/global pause frames (ethtool), by direction (rx: the peer paused us) and priority.");
    for (const NetInterface* i : e.interfaces) {
        for (const PauseStream& s : pause_streams()) {
            if (const Counter* c = first_valid(i->pause, s.frames)) {
                w.sample("stallscope_network_pause_frames_total",
                         {{"interface", i->name}, {"direction", s.direction}, {"priority", s.priority}}, **c);
            }
        }
    }
    w.family("stallscope_network_pause_duration_seconds_total", MetricType::counter,
             "Time paused by PFC/global pause (ethtool *_pause_duration, microseconds / 1e6), seconds.");
    for (const NetInterface* i : e.interfaces) {
        for (const PauseStream& s : pause_streams()) {
            if (const Counter* c = first_valid(i->pause, s.duration_us)) {
                w.sample("stallscope_network_pause_duration_seconds_total",
                         {{"interface", i->name}, {"direction", s.direction}, {"priority", s.priority}},
                         static_cast<double>(**c) / 1e6);
            }
        }
    }
    static const std::string kStormWarning = "tx_pause_storm_warning_events";
    static const std::string kStormError = "tx_pause_storm_error_events";
    w.family("stallscope_network_pause_storm_events_total", MetricType::counter,
             "Pause storm events (ethtool): warning = long pause TX, error = pause TX disabled by the NIC.");
    for (const NetInterface* i : e.interfaces) {
        if (const Counter* c = valid(i->pause, kStormWarning)) {
            w.sample("stallscope_network_pause_storm_events_total",
                     {{"interface", i->name}, {"severity", "warning"}}, **c);
        }
        if (const Counter* c = valid(i->pause, kStormError)) {
            w.sample("stallscope_network_pause_storm_events_total",
                     {{"interface", i->name}, {"severity", "error"}}, **c);
        }
    }
    w.family("stallscope_network_ethtool_events_total", MetricType::counter,
             "Selected ethtool -S counters (drops, buffer pressure, PCIe stalls, PHY errors), raw name in "
             "counter.");
    for (const NetInterface* i : e.interfaces) {
        for (const std::string& name : kEthtoolAllowList) {
            if (const Counter* c = valid(i->pause, name)) {
                w.sample("stallscope_network_ethtool_events_total",
                         {{"interface", i->name}, {"counter", name}}, **c);
            }
        }
    }
}

void write_rdma_families(ExpositionWriter& w, const Entities& e) {
    char buf[16];
    auto port_labels = [&buf](const RdmaPort& p) { return int_label(buf, p.port); };
    w.family("stallscope_rdma_port_info", MetricType::gauge, "RDMA port identity (always 1).");
    for (const RdmaPort& p : e.rdma_ports) {
        w.sample("stallscope_rdma_port_info",
                 {{"device", p.device},
                  {"port", port_labels(p)},
                  {"link_layer", p.link_layer},
                  {"netdev", p.netdev}},
                 1.0);
    }
    w.family("stallscope_rdma_port_active", MetricType::gauge, "1 when the port state is ACTIVE.");
    for (const RdmaPort& p : e.rdma_ports) {
        if (p.state.empty()) continue;
        w.sample("stallscope_rdma_port_active", {{"device", p.device}, {"port", port_labels(p)}},
                 p.state == "ACTIVE" ? 1.0 : 0.0);
    }
    w.family("stallscope_rdma_port_link_up", MetricType::gauge, "1 when the physical state is LinkUp.");
    for (const RdmaPort& p : e.rdma_ports) {
        if (p.phys_state.empty()) continue;
        w.sample("stallscope_rdma_port_link_up", {{"device", p.device}, {"port", port_labels(p)}},
                 p.phys_state == "LinkUp" ? 1.0 : 0.0);
    }
    w.family("stallscope_rdma_port_rate_bytes_per_second", MetricType::gauge,
             "Port link rate, bytes per second.");
    for (const RdmaPort& p : e.rdma_ports) {
        if (!p.rate_gbps) continue;
        w.sample("stallscope_rdma_port_rate_bytes_per_second",
                 {{"device", p.device}, {"port", port_labels(p)}}, *p.rate_gbps * 1e9 / 8);
    }
    w.family("stallscope_rdma_port_receive_bytes_total", MetricType::counter,
             "Bytes received (port_rcv_data * 4).");
    for (const RdmaPort& p : e.rdma_ports) {
        if (p.rx_bytes)
            w.sample("stallscope_rdma_port_receive_bytes_total",
                     {{"device", p.device}, {"port", port_labels(p)}}, *p.rx_bytes);
    }
    w.family("stallscope_rdma_port_transmit_bytes_total", MetricType::counter,
             "Bytes transmitted (port_xmit_data * 4).");
    for (const RdmaPort& p : e.rdma_ports) {
        if (p.tx_bytes)
            w.sample("stallscope_rdma_port_transmit_bytes_total",
                     {{"device", p.device}, {"port", port_labels(p)}}, *p.tx_bytes);
    }
    w.family("stallscope_rdma_port_events_total", MetricType::counter,
             "Selected IBA port counters (ports/N/counters), raw file name in counter.");
    for (const RdmaPort& p : e.rdma_ports) {
        for (const std::string& name : kPortCounterAllowList) {
            if (const Counter* c = valid(p.counters, name)) {
                w.sample("stallscope_rdma_port_events_total",
                         {{"device", p.device}, {"port", port_labels(p)}, {"counter", name}}, **c);
            }
        }
    }
    w.family("stallscope_rdma_hw_events_total", MetricType::counter,
             "Selected mlx5 hw_counters (congestion, retransmit, QP errors), raw file name in counter.");
    for (const RdmaPort& p : e.rdma_ports) {
        for (const std::string& name : kHwCounterAllowList) {
            if (const Counter* c = valid(p.hw_counters, name)) {
                w.sample("stallscope_rdma_hw_events_total",
                         {{"device", p.device}, {"port", port_labels(p)}, {"counter", name}}, **c);
            }
        }
    }
}

}  // namespace stallscope::textfile
