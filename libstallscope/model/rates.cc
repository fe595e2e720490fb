#include "libstallscope/model/rates.h"

namespace stallscope {
namespace {

void put(std::map<std::string, CounterDelta>& row, const std::string& name, const Counter& prev,
         const Counter& cur, double interval) {
    if (auto d = counter_delta(prev, cur, interval)) row[name] = *d;
}

void diff_maps(std::map<std::string, CounterDelta>& row, const CounterMap& prev, const CounterMap& cur,
               double interval) {
    for (const auto& [name, value] : cur) {
        auto it = prev.find(name);
        if (it != prev.end()) put(row, name, it->second, value, interval);
    }
}

void diff_host(DeltaTable& table, const HostStats& p, const HostStats& c, double dt) {
    auto& row = table["host"];
    put(row, "oom_kills", p.oom_kills, c.oom_kills, dt);
    put(row, "psi_cpu_some_total_us", p.psi.cpu_some_total_us, c.psi.cpu_some_total_us, dt);
    put(row, "psi_io_some_total_us", p.psi.io_some_total_us, c.psi.io_some_total_us, dt);
    put(row, "psi_io_full_total_us", p.psi.io_full_total_us, c.psi.io_full_total_us, dt);
    put(row, "psi_memory_some_total_us", p.psi.memory_some_total_us, c.psi.memory_some_total_us, dt);
    put(row, "psi_memory_full_total_us", p.psi.memory_full_total_us, c.psi.memory_full_total_us, dt);
    if (row.empty()) table.erase("host");
}

void diff_interface(DeltaTable& table, const NetInterface& p, const NetInterface& c, double dt) {
    auto& row = table[c.name];
    put(row, "rx_bytes", p.rx_bytes, c.rx_bytes, dt);
    put(row, "rx_packets", p.rx_packets, c.rx_packets, dt);
    put(row, "rx_errors", p.rx_errors, c.rx_errors, dt);
    put(row, "rx_dropped", p.rx_dropped, c.rx_dropped, dt);
    put(row, "rx_fifo", p.rx_fifo, c.rx_fifo, dt);
    put(row, "rx_frame", p.rx_frame, c.rx_frame, dt);
    put(row, "rx_compressed", p.rx_compressed, c.rx_compressed, dt);
    put(row, "rx_multicast", p.rx_multicast, c.rx_multicast, dt);
    put(row, "tx_bytes", p.tx_bytes, c.tx_bytes, dt);
    put(row, "tx_packets", p.tx_packets, c.tx_packets, dt);
    put(row, "tx_errors", p.tx_errors, c.tx_errors, dt);
    put(row, "tx_dropped", p.tx_dropped, c.tx_dropped, dt);
    put(row, "tx_fifo", p.tx_fifo, c.tx_fifo, dt);
    put(row, "tx_colls", p.tx_colls, c.tx_colls, dt);
    put(row, "tx_carrier", p.tx_carrier, c.tx_carrier, dt);
    put(row, "tx_compressed", p.tx_compressed, c.tx_compressed, dt);
    diff_maps(row, p.pause, c.pause, dt);
    if (row.empty()) table.erase(c.name);
}

void diff_gpu(DeltaTable& table, const Gpu& p, const Gpu& c, double dt) {
    const std::string key = gpu_key(c);
    auto& row = table[key];
    put(row, "energy_mj", p.energy_mj, c.energy_mj, dt);
    put(row, "violation_power_ns", p.violation_power_ns, c.violation_power_ns, dt);
    put(row, "violation_thermal_ns", p.violation_thermal_ns, c.violation_thermal_ns, dt);
    put(row, "ecc_uncorrected", p.ecc_uncorrected, c.ecc_uncorrected, dt);
    put(row, "ecc_corrected", p.ecc_corrected, c.ecc_corrected, dt);
    if (p.interconnect && c.interconnect) {  // NVLink / PCIe field values (issue 15)
        const GpuInterconnect &a = *p.interconnect, &b = *c.interconnect;
        put(row, "nvlink_tx_bytes", a.nvlink_tx_bytes, b.nvlink_tx_bytes, dt);
        put(row, "nvlink_rx_bytes", a.nvlink_rx_bytes, b.nvlink_rx_bytes, dt);
        put(row, "nvlink_crc_errors", a.nvlink_crc_errors, b.nvlink_crc_errors, dt);
        put(row, "nvlink_replay_errors", a.nvlink_replay_errors, b.nvlink_replay_errors, dt);
        put(row, "nvlink_recovery_errors", a.nvlink_recovery_errors, b.nvlink_recovery_errors, dt);
        put(row, "pcie_replay_count", a.pcie_replay_count, b.pcie_replay_count, dt);
        put(row, "pcie_tx_bytes", a.pcie_tx_bytes, b.pcie_tx_bytes, dt);
        put(row, "pcie_rx_bytes", a.pcie_rx_bytes, b.pcie_rx_bytes, dt);
    }
    if (row.empty()) table.erase(key);
}

// The job's cgroup, as entity "job_cgroup" of the host table; compared only within one cgroup path.
void diff_job_cgroup(DeltaTable& table, const JobCgroup& p, const JobCgroup& c, double dt) {
    if (p.path != c.path) return;
    auto& row = table["job_cgroup"];
    put(row, "memory_oom_events", p.memory_oom_events, c.memory_oom_events, dt);
    put(row, "memory_oom_kill_events", p.memory_oom_kill_events, c.memory_oom_kill_events, dt);
    put(row, "cpu_usage_usec", p.cpu_usage_usec, c.cpu_usage_usec, dt);
    put(row, "cpu_nr_periods", p.cpu_nr_periods, c.cpu_nr_periods, dt);
    put(row, "cpu_nr_throttled", p.cpu_nr_throttled, c.cpu_nr_throttled, dt);
    put(row, "cpu_throttled_usec", p.cpu_throttled_usec, c.cpu_throttled_usec, dt);
    put(row, "psi_cpu_some_total_us", p.psi.cpu_some_total_us, c.psi.cpu_some_total_us, dt);
    put(row, "psi_io_full_total_us", p.psi.io_full_total_us, c.psi.io_full_total_us, dt);
    put(row, "psi_memory_full_total_us", p.psi.memory_full_total_us, c.psi.memory_full_total_us, dt);
    if (row.empty()) table.erase("job_cgroup");
}

}  // namespace

std::string gpu_key(const Gpu& gpu) {
    return gpu.uuid.empty() ? "gpu" + std::to_string(gpu.index) : gpu.uuid;
}

const CounterDelta* Rates::find(const DeltaTable& table, const std::string& entity,
                                const std::string& counter) const {
    auto row = table.find(entity);
    if (row == table.end()) return nullptr;
    auto cell = row->second.find(counter);
    return cell == row->second.end() ? nullptr : &cell->second;
}

Rates compute_rates(const Snapshot& previous, const Snapshot& current) {
    Rates r;
    r.interval_seconds = current.time - previous.time;
    if (!(r.interval_seconds > 0)) return r;  // clock went backwards or same sample: no deltas
    const double dt = r.interval_seconds;
    diff_host(r.host, previous.host_stats, current.host_stats, dt);
    if (previous.job_cgroup && current.job_cgroup)
        diff_job_cgroup(r.host, *previous.job_cgroup, *current.job_cgroup, dt);
    for (const auto& c : current.interfaces)
        for (const auto& p : previous.interfaces)
            if (p.name == c.name) diff_interface(r.interfaces, p, c, dt);
    for (const auto& c : current.rdma) {
        for (const auto& p : previous.rdma) {
            if (p.device != c.device || p.port != c.port) continue;
            std::map<std::string, CounterDelta> counters, hw;
            diff_maps(counters, p.counters, c.counters, dt);
            diff_maps(hw, p.hw_counters, c.hw_counters, dt);
            if (!counters.empty()) r.rdma_counters[c.key()] = std::move(counters);
            if (!hw.empty()) r.rdma_hw_counters[c.key()] = std::move(hw);
        }
    }
    for (const auto& c : current.gpus)
        for (const auto& p : previous.gpus)
            if (gpu_key(p) == gpu_key(c)) diff_gpu(r.gpus, p, c, dt);
    return r;
}

}  // namespace stallscope
