// The numbers of an interface, RDMA port or GPU that move from sample to sample, under their to_json keys
// and in to_json's order: the v2 writer compares these leaf by leaf (snapshot_diff_parts.cc) and the v2
// reader writes their changes straight into the Snapshot it keeps (kept_counter.cc). One table for both,
// so what the writer treats as a moving number is what the reader can place.
#pragma once

#include <cstddef>
#include <string_view>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

// Exactly one member set: a counter (to_json writes it as an unsigned integer, snapshot_from_json reads it
// with Reader::u64), a gauge (any JSON number, read as a double), or a map of counters.
template <typename T>
struct Moving {
    const char* key;
    Counter T::*counter = nullptr;
    Gauge T::*gauge = nullptr;
    CounterMap T::*map = nullptr;
};

inline constexpr Moving<NetInterface> kMovingInterface[] = {
    {"rx_bytes", &NetInterface::rx_bytes},
    {"rx_packets", &NetInterface::rx_packets},
    {"rx_errors", &NetInterface::rx_errors},
    {"rx_dropped", &NetInterface::rx_dropped},
    {"rx_fifo", &NetInterface::rx_fifo},
    {"rx_frame", &NetInterface::rx_frame},
    {"rx_compressed", &NetInterface::rx_compressed},
    {"rx_multicast", &NetInterface::rx_multicast},
    {"tx_bytes", &NetInterface::tx_bytes},
    {"tx_packets", &NetInterface::tx_packets},
    {"tx_errors", &NetInterface::tx_errors},
    {"tx_dropped", &NetInterface::tx_dropped},
    {"tx_fifo", &NetInterface::tx_fifo},
    {"tx_colls", &NetInterface::tx_colls},
    {"tx_carrier", &NetInterface::tx_carrier},
    {"tx_compressed", &NetInterface::tx_compressed},
    {.key = "pause", .map = &NetInterface::pause},
};
inline constexpr Moving<RdmaPort> kMovingRdmaPort[] = {
    {"rx_bytes", &RdmaPort::rx_bytes},
    {"tx_bytes", &RdmaPort::tx_bytes},
    {.key = "counters", .map = &RdmaPort::counters},
    {.key = "hw_counters", .map = &RdmaPort::hw_counters},
};
inline constexpr Moving<Gpu> kMovingGpu[] = {
    {.key = "utilization_pct", .gauge = &Gpu::utilization_pct},
    {"memory_used_bytes", &Gpu::memory_used_bytes},
    {.key = "temperature_c", .gauge = &Gpu::temperature_c},
    {.key = "power_w", .gauge = &Gpu::power_w},
    {.key = "power_limit_w", .gauge = &Gpu::power_limit_w},
    {"sm_clock_mhz", &Gpu::sm_clock_mhz},
    {"throttle_reasons_mask", &Gpu::throttle_reasons_mask},
    {"violation_power_ns", &Gpu::violation_power_ns},
    {"violation_thermal_ns", &Gpu::violation_thermal_ns},
    {"ecc_uncorrected", &Gpu::ecc_uncorrected},
    {"ecc_corrected", &Gpu::ecc_corrected},
    {"energy_mj", &Gpu::energy_mj},
};

// The host's numbers, for the reader only (the writer compares host_stats as a tree: one small object):
// "/host_stats/<key>" and "/host_stats/psi/<key>" pointers land on these, as read_host_stats reads them.
inline constexpr Moving<HostStats> kMovingHost[] = {
    {.key = "load1", .gauge = &HostStats::load1},
    {.key = "load5", .gauge = &HostStats::load5},
    {.key = "load15", .gauge = &HostStats::load15},
    {"mem_total_bytes", &HostStats::mem_total_bytes},
    {"mem_available_bytes", &HostStats::mem_available_bytes},
    {"procs_running", &HostStats::procs_running},
    {"procs_blocked", &HostStats::procs_blocked},
    {"oom_kills", &HostStats::oom_kills},
};
inline constexpr Moving<Psi> kMovingPsi[] = {
    {.key = "cpu_some_avg10", .gauge = &Psi::cpu_some_avg10},
    {.key = "cpu_some_avg60", .gauge = &Psi::cpu_some_avg60},
    {.key = "io_some_avg10", .gauge = &Psi::io_some_avg10},
    {.key = "io_some_avg60", .gauge = &Psi::io_some_avg60},
    {.key = "io_full_avg10", .gauge = &Psi::io_full_avg10},
    {.key = "io_full_avg60", .gauge = &Psi::io_full_avg60},
    {.key = "memory_some_avg10", .gauge = &Psi::memory_some_avg10},
    {.key = "memory_some_avg60", .gauge = &Psi::memory_some_avg60},
    {.key = "memory_full_avg10", .gauge = &Psi::memory_full_avg10},
    {.key = "memory_full_avg60", .gauge = &Psi::memory_full_avg60},
    {"cpu_some_total_us", &Psi::cpu_some_total_us},
    {"io_some_total_us", &Psi::io_some_total_us},
    {"io_full_total_us", &Psi::io_full_total_us},
    {"memory_some_total_us", &Psi::memory_some_total_us},
    {"memory_full_total_us", &Psi::memory_full_total_us},
};

// The entry of `table` named `key`, or null.
template <typename T, std::size_t N>
constexpr const Moving<T>* find_moving(const Moving<T> (&table)[N], std::string_view key) {
    for (const auto& f : table)
        if (key == f.key) return &f;
    return nullptr;
}

}  // namespace stallscope
