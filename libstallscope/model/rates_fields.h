// The counters of the structs with a fixed set of them (NetInterface, Gpu, HostStats, JobCgroup), by the
// name they have in a Rates row, in name order (the order of a row). Shared by compute_rates and
// RatesTracker so both walk the same counters under the same names. Internal to libstallscope/model.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

#include "libstallscope/model/snapshot.h"

namespace stallscope::rates_fields {

template <class T>
struct Field {
    std::string_view name;
    const Counter* (*get)(const T&);  // nullptr when the struct has no such counter in this sample
};

// clang-format off
#define STALLSCOPE_FIELD(T, n) Field<T>{#n, [](const T& x) -> const Counter* { return &x.n; }}
#define STALLSCOPE_NAMED(T, name, expr) Field<T>{name, [](const T& x) -> const Counter* { return &(expr); }}
// NVLink / PCIe field values (issue 15): compared only when both samples have the interconnect block.
#define STALLSCOPE_LINK(n) \
    Field<Gpu>{#n, [](const Gpu& g) -> const Counter* { return g.interconnect ? &g.interconnect->n : nullptr; }}
// clang-format on

template <class T, std::size_t N>
inline std::array<Field<T>, N> by_name(std::array<Field<T>, N> fields) {
    std::sort(fields.begin(), fields.end(),
              [](const Field<T>& a, const Field<T>& b) { return a.name < b.name; });
    return fields;
}

inline const auto& interface_fields() {
    using I = NetInterface;
    static const auto fields = by_name(std::array{
        STALLSCOPE_FIELD(I, rx_bytes), STALLSCOPE_FIELD(I, rx_packets), STALLSCOPE_FIELD(I, rx_errors),
        STALLSCOPE_FIELD(I, rx_dropped), STALLSCOPE_FIELD(I, rx_fifo), STALLSCOPE_FIELD(I, rx_frame),
        STALLSCOPE_FIELD(I, rx_compressed), STALLSCOPE_FIELD(I, rx_multicast), STALLSCOPE_FIELD(I, tx_bytes),
        STALLSCOPE_FIELD(I, tx_packets), STALLSCOPE_FIELD(I, tx_errors), STALLSCOPE_FIELD(I, tx_dropped),
        STALLSCOPE_FIELD(I, tx_fifo), STALLSCOPE_FIELD(I, tx_colls), STALLSCOPE_FIELD(I, tx_carrier),
        STALLSCOPE_FIELD(I, tx_compressed)});
    return fields;
}

inline const auto& gpu_fields() {
    static const auto fields = by_name(std::array{
        STALLSCOPE_FIELD(Gpu, energy_mj), STALLSCOPE_FIELD(Gpu, violation_power_ns),
        STALLSCOPE_FIELD(Gpu, violation_thermal_ns), STALLSCOPE_FIELD(Gpu, ecc_uncorrected),
        STALLSCOPE_FIELD(Gpu, ecc_corrected), STALLSCOPE_LINK(nvlink_tx_bytes),
        STALLSCOPE_LINK(nvlink_rx_bytes), STALLSCOPE_LINK(nvlink_crc_errors),
        STALLSCOPE_LINK(nvlink_replay_errors), STALLSCOPE_LINK(nvlink_recovery_errors),
        STALLSCOPE_LINK(pcie_replay_count), STALLSCOPE_LINK(pcie_tx_bytes), STALLSCOPE_LINK(pcie_rx_bytes)});
    return fields;
}

inline const auto& host_fields() {
    using H = HostStats;
    static const auto fields = by_name(std::array{
        STALLSCOPE_FIELD(H, oom_kills), STALLSCOPE_NAMED(H, "psi_cpu_some_total_us", x.psi.cpu_some_total_us),
        STALLSCOPE_NAMED(H, "psi_io_some_total_us", x.psi.io_some_total_us),
        STALLSCOPE_NAMED(H, "psi_io_full_total_us", x.psi.io_full_total_us),
        STALLSCOPE_NAMED(H, "psi_memory_some_total_us", x.psi.memory_some_total_us),
        STALLSCOPE_NAMED(H, "psi_memory_full_total_us", x.psi.memory_full_total_us)});
    return fields;
}

inline const auto& cgroup_fields() {
    using C = JobCgroup;
    static const auto fields = by_name(
        std::array{STALLSCOPE_FIELD(C, memory_oom_events), STALLSCOPE_FIELD(C, memory_oom_kill_events),
                   STALLSCOPE_FIELD(C, cpu_usage_usec), STALLSCOPE_FIELD(C, cpu_nr_periods),
                   STALLSCOPE_FIELD(C, cpu_nr_throttled), STALLSCOPE_FIELD(C, cpu_throttled_usec),
                   STALLSCOPE_NAMED(C, "psi_cpu_some_total_us", x.psi.cpu_some_total_us),
                   STALLSCOPE_NAMED(C, "psi_io_full_total_us", x.psi.io_full_total_us),
                   STALLSCOPE_NAMED(C, "psi_memory_full_total_us", x.psi.memory_full_total_us)});
    return fields;
}

#undef STALLSCOPE_FIELD
#undef STALLSCOPE_NAMED
#undef STALLSCOPE_LINK

}  // namespace stallscope::rates_fields
