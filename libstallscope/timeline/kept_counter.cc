#include "libstallscope/timeline/kept_counter.h"

#include <charconv>
#include <utility>

namespace stallscope {
namespace {

// The members snapshot_from_json reads with Reader::u64 (an unsigned integer, as the tree holds after an
// add), under their to_json keys. A member not listed here is simply re-read with its element.
constexpr std::pair<const char*, Counter NetInterface::*> kInterface[] = {
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
};
constexpr std::pair<const char*, Counter RdmaPort::*> kRdma[] = {
    {"rx_bytes", &RdmaPort::rx_bytes},
    {"tx_bytes", &RdmaPort::tx_bytes},
};
constexpr std::pair<const char*, Counter Gpu::*> kGpu[] = {
    {"memory_used_bytes", &Gpu::memory_used_bytes},
    {"sm_clock_mhz", &Gpu::sm_clock_mhz},
    {"throttle_reasons_mask", &Gpu::throttle_reasons_mask},
    {"violation_power_ns", &Gpu::violation_power_ns},
    {"violation_thermal_ns", &Gpu::violation_thermal_ns},
    {"ecc_uncorrected", &Gpu::ecc_uncorrected},
    {"ecc_corrected", &Gpu::ecc_corrected},
    {"energy_mj", &Gpu::energy_mj},
};
// Read with Reader::number: any JSON number, as a double.
constexpr std::pair<const char*, Gauge Gpu::*> kGpuGauges[] = {
    {"utilization_pct", &Gpu::utilization_pct},
    {"temperature_c", &Gpu::temperature_c},
    {"power_w", &Gpu::power_w},
    {"power_limit_w", &Gpu::power_limit_w},
};

template <typename M, std::size_t N>
M find_member(const std::pair<const char*, M> (&table)[N], std::string_view key) {
    for (const auto& [name, member] : table)
        if (key == name) return member;
    return nullptr;
}

// The next segment of `p` after position `at` (which holds '/'), advancing `at`.
bool next_segment(std::string_view p, std::size_t& at, std::string_view& segment) {
    if (at >= p.size() || p[at] != '/') return false;
    const std::size_t end = std::min(p.find('/', at + 1), p.size());
    segment = p.substr(at + 1, end - at - 1);
    at = end;
    return true;
}

}  // namespace

void parse_kept_counter(std::string_view p, KeptCounter& out) {
    out.kind = KeptCounter::Kind::none;
    out.interface_counter = nullptr;
    out.interface_map = nullptr;
    out.rdma_counter = nullptr;
    out.rdma_map = nullptr;
    out.gpu_counter = nullptr;
    out.gpu_gauge = nullptr;
    if (p.find('~') != std::string_view::npos) return;  // an escaped name: not one of ours
    std::size_t at = 0;
    std::string_view part, index, member, name;
    if (!next_segment(p, at, part) || !next_segment(p, at, index) || !next_segment(p, at, member)) return;
    const bool has_name = next_segment(p, at, name);
    if (at != p.size()) return;  // deeper than a map entry
    const auto r = std::from_chars(index.data(), index.data() + index.size(), out.element);
    if (index.empty() || r.ec != std::errc() || r.ptr != index.data() + index.size()) return;
    KeptCounter::Kind kind = KeptCounter::Kind::none;
    if (part == "interfaces") {
        if (has_name ? member == "pause"
                     : (out.interface_counter = find_member(kInterface, member)) != nullptr)
            kind = KeptCounter::Kind::interface;
        if (has_name && kind != KeptCounter::Kind::none) out.interface_map = &NetInterface::pause;
    } else if (part == "rdma") {
        if (has_name) {
            if (member == "counters") out.rdma_map = &RdmaPort::counters;
            if (member == "hw_counters") out.rdma_map = &RdmaPort::hw_counters;
            if (out.rdma_map) kind = KeptCounter::Kind::rdma;
        } else if ((out.rdma_counter = find_member(kRdma, member)) != nullptr) {
            kind = KeptCounter::Kind::rdma;
        }
    } else if (part == "gpus" && !has_name) {
        out.gpu_counter = find_member(kGpu, member);
        if (!out.gpu_counter) out.gpu_gauge = find_member(kGpuGauges, member);
        if (out.gpu_counter || out.gpu_gauge) kind = KeptCounter::Kind::gpu;
    }
    if (kind == KeptCounter::Kind::none) return;
    out.name.assign(name);
    out.kind = kind;
}

Counter* kept_counter(Snapshot& s, const KeptCounter& c) {
    auto in_map = [&](CounterMap& m) -> Counter* {
        const auto it = m.find(c.name);
        return it == m.end() ? nullptr : &it->second;
    };
    switch (c.kind) {
        case KeptCounter::Kind::interface:
            if (c.element >= s.interfaces.size()) return nullptr;
            return c.interface_map ? in_map(s.interfaces[c.element].*c.interface_map)
                                   : &(s.interfaces[c.element].*c.interface_counter);
        case KeptCounter::Kind::rdma:
            if (c.element >= s.rdma.size()) return nullptr;
            return c.rdma_map ? in_map(s.rdma[c.element].*c.rdma_map) : &(s.rdma[c.element].*c.rdma_counter);
        case KeptCounter::Kind::gpu:
            if (c.element >= s.gpus.size() || !c.gpu_counter) return nullptr;
            return &(s.gpus[c.element].*c.gpu_counter);
        default:
            return nullptr;
    }
}

Gauge* kept_gauge(Snapshot& s, const KeptCounter& c) {
    if (c.kind != KeptCounter::Kind::gpu || !c.gpu_gauge || c.element >= s.gpus.size()) return nullptr;
    return &(s.gpus[c.element].*c.gpu_gauge);
}

}  // namespace stallscope
