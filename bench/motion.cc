#include "bench/motion.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace stallscope::bench {

std::uint64_t Motion::next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

std::uint64_t Motion::pick(std::uint64_t n) {
    bits += std::log2(static_cast<double>(n));
    return next() % n;
}

double Motion::jitter(double around, double spread) {
    return around * (1.0 - spread + 2 * spread * static_cast<double>(next() % 10000) / 10000.0);
}

void Motion::grow(Counter& c, double rate) {
    if (!c) return;
    *c += static_cast<std::uint64_t>(jitter(rate, 0.1));
    bits += std::log2(std::min(10000.0, 0.2 * rate + 1));  // 10 000 steps, fewer integers at small rates
}

void step_sample(Snapshot& s, Motion& m) {
    s.time += 1;
    for (auto& iface : s.interfaces) {
        m.grow(iface.rx_bytes, 1e9);
        m.grow(iface.tx_bytes, 9e8);
        m.grow(iface.rx_packets, 1e5);
        m.grow(iface.tx_packets, 9e4);
        for (auto& [name, value] : iface.pause) m.grow(value, 50);
    }
    for (auto& port : s.rdma) {
        for (auto* map : {&port.counters, &port.hw_counters})
            for (auto& [name, value] : *map)
                if (name.find("packets") != std::string::npos || name.find("_data") != std::string::npos)
                    m.grow(value, 5e8);
        // As the source derives them (port_rcv_data / port_xmit_data count 4-byte words): no information
        // of their own.
        const auto words = [&](const char* name) -> Counter {
            auto it = port.counters.find(name);
            return it != port.counters.end() && it->second ? Counter(*it->second * 4) : std::nullopt;
        };
        port.rx_bytes = words("port_rcv_data");
        port.tx_bytes = words("port_xmit_data");
    }
    for (auto& gpu : s.gpus) {
        m.grow(gpu.energy_mj, 650'000);
        if (gpu.utilization_pct) gpu.utilization_pct = static_cast<double>(90 + m.pick(11));
        if (gpu.power_w) gpu.power_w = static_cast<double>(600'000 + m.pick(100'000)) / 1000.0;  // mW
        if (gpu.temperature_c) gpu.temperature_c = static_cast<double>(60 + m.pick(8));
        if (gpu.sm_clock_mhz) gpu.sm_clock_mhz = 1980 - 15 * m.pick(4);
        if (gpu.memory_used_bytes) gpu.memory_used_bytes = (70ULL << 30) + m.pick(1024) * (1 << 20);
    }
    if (s.host_stats.load1) {
        s.host_stats.load1 = m.jitter(30, 0.05);
        m.bits += std::log2(10000.0);
    }
    if (s.host_stats.mem_available_bytes) *s.host_stats.mem_available_bytes -= m.pick(64 << 20);
}

void make_sick(Snapshot& s, Motion& m) {
    const auto grow = [&](Counter& c, double rate) {
        if (!c) c = 0;  // a port without the counter: it has it now
        m.grow(c, rate);
    };
    for (std::size_t i = 0; i + 1 < s.rdma.size(); ++i) grow(s.rdma[i].hw_counters["rp_cnp_handled"], 2000);
    if (s.rdma.size() >= 2) {
        // Down; step_sample still moves its traffic counters, but the rules judge a port by its state.
        s.rdma.back().state = "DOWN";
        s.rdma.back().phys_state = "Disabled";
    }
    if (s.gpus.size() >= 2) {
        s.gpus[1].throttle_reasons_mask = 0x40;  // HW thermal slowdown (NVML clocks-event reasons)
        s.gpus[1].remapped_rows_pending = 1;
    }
}

void CounterMotion::apply(Snapshot& s) {
    std::size_t i = 0;
    auto move = [&](Counter& c, double rate) {
        if (!c) return;
        if (i == offsets.size()) offsets.push_back(0);
        offsets[i] += static_cast<std::uint64_t>(motion.jitter(rate, 0.1));
        *c += offsets[i++];
    };
    for (auto& iface : s.interfaces) {
        move(iface.rx_bytes, 1e9), move(iface.tx_bytes, 9e8);
        move(iface.rx_packets, 1e5), move(iface.tx_packets, 9e4);
    }
    for (auto& port : s.rdma) {
        for (auto* map : {&port.counters, &port.hw_counters})
            for (auto& [name, value] : *map)
                if (name.find("packets") != std::string::npos || name.find("_data") != std::string::npos)
                    move(value, 5e8);
        auto data = port.counters.find("port_rcv_data");
        if (data != port.counters.end() && data->second) port.rx_bytes = *data->second * 4;
        data = port.counters.find("port_xmit_data");
        if (data != port.counters.end() && data->second) port.tx_bytes = *data->second * 4;
    }
}

}  // namespace stallscope::bench
