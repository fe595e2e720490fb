// Small builders for in-memory snapshots, so each rule test reads like its scenario.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"
#include "libstallscope/rules/finding.h"

namespace stallscope::test {

inline Snapshot at(double time) {
    Snapshot s;
    s.time = time;
    s.host = "node1";
    return s;
}

inline CounterMap counters(std::initializer_list<std::pair<const std::string, std::uint64_t>> values) {
    CounterMap m;
    for (const auto& [k, v] : values) m[k] = v;
    return m;
}

inline RdmaPort port(const std::string& device, CounterMap hw, CounterMap pma = {},
                     const std::string& state = "ACTIVE", const std::string& netdev = "") {
    RdmaPort p;
    p.device = device;
    p.port = 1;
    p.state = state;
    p.phys_state = state == "ACTIVE" ? "LinkUp" : "Disabled";
    p.rate_gbps = 400;
    p.link_layer = "Ethernet";
    p.netdev = netdev;
    p.hw_counters = std::move(hw);
    p.counters = std::move(pma);
    return p;
}

inline NetInterface iface(const std::string& name, std::uint64_t packets, std::uint64_t errors = 0,
                          std::uint64_t drops = 0, CounterMap pause = {}) {
    NetInterface i;
    i.name = name;
    i.rx_packets = packets;
    i.tx_packets = packets;
    i.rx_errors = errors;
    i.tx_errors = 0;
    i.rx_dropped = drops;
    i.tx_dropped = 0;
    i.pause = std::move(pause);
    return i;
}

inline Gpu gpu(int index, double util, double power = 500, double temp = 60, std::uint64_t clock = 1980) {
    Gpu g;
    g.index = index;
    g.uuid = "GPU-" + std::to_string(index);
    g.pci_bus_id = "00000000:" + std::to_string(10 + index) + ":00.0";
    g.utilization_pct = util;
    g.power_w = power;
    g.power_limit_w = 700;
    g.temperature_c = temp;
    g.sm_clock_mhz = clock;
    g.max_sm_clock_mhz = 1980;
    g.memory_used_bytes = 40ull << 30;
    g.memory_total_bytes = 80ull << 30;
    return g;
}

// A node whose counters of every kind grow with `n`: two netdevs (one with pause counters), two RDMA
// ports ("mlx5_10" sorts before "mlx5_2"), two GPUs (the second keyed by index, the first with NVLink),
// host and job-cgroup counters. The rates tests build their series from it.
inline Snapshot counting_node(double t, std::uint64_t n) {
    Snapshot s = at(t);
    s.interfaces.push_back(
        iface("ib0", 1000 * n, n, 0, counters({{"rx_prio3_pause", 10 * n}, {"tx_pause", n}})));
    s.interfaces.push_back(iface("eth0", 10 * n));
    s.rdma = {port("mlx5_10", counters({{"np_cnp_sent", 3 * n}, {"out_of_buffer", n}}),
                   counters({{"port_rcv_data", 100 * n}})),
              port("mlx5_2", counters({{"np_cnp_sent", 2 * n}}), counters({{"port_rcv_data", 50 * n}}))};
    s.gpus = {gpu(0, 90), gpu(1, 90)};
    s.gpus[1].uuid.clear();  // keyed "gpu1"
    for (auto& g : s.gpus) g.energy_mj = 1000 * n, g.ecc_corrected = n;
    s.gpus[0].interconnect = GpuInterconnect{};
    s.gpus[0].interconnect->nvlink_tx_bytes = 4096 * n;
    s.host_stats.oom_kills = n;
    s.host_stats.psi.io_full_total_us = 7 * n;
    JobCgroup job;
    job.path = "/job_1";
    job.cpu_nr_periods = 10 * n;
    s.job_cgroup = job;
    return s;
}

// Runs a stateless rule over (prev, cur) with rates computed between them.
template <typename Rule>
Findings run_pair(Rule rule, const Snapshot& prev, const Snapshot& cur, const Thresholds& t = {}) {
    const Rates rates = compute_rates(prev, cur);
    Findings out;
    rule(RuleInput{cur, &prev, &rates, t}, out);
    return out;
}

// Runs a stateless rule on one snapshot (first sample: no rates).
template <typename Rule>
Findings run_one(Rule rule, const Snapshot& cur, const Thresholds& t = {}) {
    Findings out;
    rule(RuleInput{cur, nullptr, nullptr, t}, out);
    return out;
}

// Feeds a stateful rule a series of snapshots; returns the findings of the last one.
template <typename Rule>
Findings run_series(Rule& rule, const std::vector<Snapshot>& series, const Thresholds& t = {}) {
    Findings out;
    for (size_t i = 0; i < series.size(); ++i) {
        out.clear();
        std::optional<Rates> rates;
        if (i > 0) rates = compute_rates(series[i - 1], series[i]);
        rule.evaluate(RuleInput{series[i], i ? &series[i - 1] : nullptr, rates ? &*rates : nullptr, t}, out);
    }
    return out;
}

// Every row of `r` answers the rules' counters by index (DeltaRow::cell) as it does by name, and is
// indexed: compute_rates leaves no row to fall back to a lookup by name each sample.
inline bool rule_index_matches_names(const Rates& r) {
    for (const DeltaTable* t : {&r.host, &r.interfaces, &r.rdma_counters, &r.rdma_hw_counters, &r.gpus})
        for (const auto& [entity, row] : *t) {
            if (row.dirty()) return false;
            for (const CounterName n : CounterName::all()) {
                const auto it = row.find(n.name());
                if (row.cell(n) != (it == row.end() ? nullptr : &it->second)) return false;
            }
        }
    return true;
}

inline double num(const Finding& f, const std::string& key) {
    auto it = f.reason.evidence.find(key);
    return it == f.reason.evidence.end() ? -1 : std::get<double>(it->second);
}

// Evidence as "key=value;" in name order (numbers as messages write them): a whole table in one CHECK.
inline std::string evidence_text(const Evidence& ev) {
    std::string s;
    for (const auto& [key, value] : ev)
        s += key + "=" +
             (value.index() == 0 ? fmt_num(std::get<double>(value)) : std::get<std::string>(value)) + ";";
    return s;
}

}  // namespace stallscope::test
