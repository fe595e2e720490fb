#include "libstallscope/job/node_stats.h"

#include <algorithm>
#include <cmath>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/rules/gpu_window_rules.h"

namespace stallscope {
namespace {

// Sum of the named counters' deltas; false when none of them had a comparable delta (not measured).
bool sum_of(const DeltaRow* row, std::initializer_list<const char*> names, double& total) {
    bool seen = false;
    if (!row) return false;
    for (const char* n : names)
        if (auto it = row->find(n); it != row->end())
            total += static_cast<double>(it->second.delta), seen = true;
    return seen;
}

const DeltaRow* row_of(const DeltaTable& table, std::string_view key) {
    const auto it = table.find(key);
    return it == table.end() ? nullptr : &it->second;
}

std::optional<double> mean(double sum, int n) {
    return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
}

Json rounded(const std::optional<double>& v) {
    if (!v || !std::isfinite(*v)) return nullptr;
    return std::round(*v * 1000.0) / 1000.0;
}

}  // namespace

std::optional<double> NodeStats::mean_gpu_util_pct() const {
    double sum = 0;
    int n = 0;
    for (const auto& g : gpus)
        if (g.mean_util_pct) sum += *g.mean_util_pct, ++n;
    return mean(sum, n);
}

int NodeStats::gpus_measured() const {
    return static_cast<int>(std::count_if(gpus.begin(), gpus.end(),
                                          [](const GpuStats& g) { return g.mean_util_pct.has_value(); }));
}

void NodeStatsAccumulator::add(const Snapshot& s) {
    if (previous_) {
        compute_rates_into(rates_, *previous_, s);  // rewritten in place: no allocation when steady
        add(s, &rates_);
    } else {
        add(s, nullptr);
    }
    previous_ = s;
}

void NodeStatsAccumulator::add(const Snapshot& s, const Rates* rates_since_previous) {
    if (samples_++ == 0) start_ = s.time;
    end_ = std::max(end_, s.time);
    gpus_allocated_ = std::max(gpus_allocated_, static_cast<int>(s.context.gpus.size()));
    for (const auto& g : s.gpus) add_gpu(g);
    if (rates_since_previous) add_ports(*rates_since_previous, s);
}

void NodeStatsAccumulator::add_gpu(const Gpu& g) {
    // Looked up by a reused key string: no allocation per GPU per sample once the GPU is known.
    gpu_key_into(g, key_);
    auto it = gpus_.find(key_);
    if (it == gpus_.end()) it = gpus_.emplace(key_, GpuSums{}).first;
    auto& st = it->second;
    st.identity.uuid = g.uuid, st.identity.name = g.name, st.identity.index = g.index;
    ++st.samples;
    if (g.utilization_pct) {
        st.util += *g.utilization_pct, ++st.util_n;
        if (*g.utilization_pct < 5) st.idle += 1;
    }
    if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes) {
        st.memory +=
            100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes);
        ++st.memory_n;
    }
    if (g.power_w) st.power += *g.power_w, ++st.power_n;
    if (g.gpm) {
        if (g.gpm->sm_active_pct) st.sm += *g.gpm->sm_active_pct, ++st.sm_n;
        if (g.gpm->tensor_active_pct) st.tensor += *g.gpm->tensor_active_pct, ++st.tensor_n;
        if (g.gpm->dram_bandwidth_pct) st.dram += *g.gpm->dram_bandwidth_pct, ++st.dram_n;
    }
    if (g.temperature_c) {
        st.max_temperature =
            st.temperature_n ? std::max(st.max_temperature, *g.temperature_c) : *g.temperature_c;
        ++st.temperature_n;
    }
    // Hardware slowdown only (HW slowdown, HW thermal, power brake), as the rules count it: a plain
    // sw_power_cap at full clocks is not throttling (issue 13: "throttle 100 %" on healthy GPUs).
    if (hw_slowdown_bits(g) != 0) st.throttled += 1;
}

void NodeStatsAccumulator::add_ports(const Rates& r, const Snapshot& s) {
    for (const auto& p : s.rdma) {
        key_.assign(p.device).append("/").append(std::to_string(p.port));  // p.key(), into a reused string
        auto it = ports_.find(key_);
        if (it == ports_.end()) it = ports_.emplace(key_, PortSums{}).first;
        auto& acc = it->second;
        acc.port = key_, acc.netdev = p.netdev;
        const auto* c = row_of(r.rdma_counters, key_);
        const auto* hw = row_of(r.rdma_hw_counters, key_);
        double rx = 0, tx = 0;
        const bool rx_seen = sum_of(c, {"port_rcv_data"}, rx);  // both read: no short-circuit
        const bool tx_seen = sum_of(c, {"port_xmit_data"}, tx);
        if (rx_seen || tx_seen) acc.data_seen = true;
        acc.rx_bytes += 4 * rx, acc.tx_bytes += 4 * tx;
        acc.cnp_seen |= sum_of(hw, {"np_cnp_sent", "rp_cnp_handled"}, acc.cnp);
        acc.ecn_seen |= sum_of(hw, {"np_ecn_marked_roce_packets"}, acc.ecn);
        double received = 0;
        const bool received_seen = sum_of(c, {"port_rcv_packets"}, received);
        double lost = 0;
        if (received_seen &&
            sum_of(hw, {"out_of_sequence", "packet_seq_err", "duplicate_request", "implied_nak_seq_err"},
                   lost)) {
            acc.loss_seen = true, acc.rcv_packets += received, acc.lost += lost;
        }
        acc.seconds += r.interval_seconds;
        if (!p.netdev.empty())
            acc.pause_seen |= sum_of(row_of(r.interfaces, p.netdev),
                                     {"rx_pause_duration", "tx_pause_duration"}, acc.paused_us);
    }
}

NodeStats NodeStatsAccumulator::finish(const std::string& host) const {
    NodeStats out;
    out.samples = samples_, out.start_time = start_, out.end_time = end_,
    out.gpus_allocated = gpus_allocated_;
    for (const auto& [key, st] : gpus_) {
        GpuStats g = st.identity;
        g.host = host;
        g.samples = st.samples;
        g.mean_util_pct = mean(st.util, st.util_n);
        g.mean_memory_pct = mean(st.memory, st.memory_n);
        g.mean_power_w = mean(st.power, st.power_n);
        g.mean_sm_active_pct = mean(st.sm, st.sm_n);
        g.mean_tensor_active_pct = mean(st.tensor, st.tensor_n);
        g.mean_dram_bandwidth_pct = mean(st.dram, st.dram_n);
        if (st.temperature_n) g.max_temperature_c = st.max_temperature;
        g.throttle_share = mean(st.throttled, st.samples);
        g.idle_share = mean(st.idle, st.util_n);
        out.gpus.push_back(std::move(g));
    }
    std::stable_sort(out.gpus.begin(), out.gpus.end(),
                     [](const GpuStats& a, const GpuStats& b) { return a.index < b.index; });
    for (const auto& [key, acc] : ports_) {
        PortStats p;
        p.host = host, p.port = acc.port, p.netdev = acc.netdev;
        if (acc.data_seen) p.rx_bytes = acc.rx_bytes, p.tx_bytes = acc.tx_bytes;
        if (acc.seconds > 0) {
            if (acc.cnp_seen) p.cnp_per_second = acc.cnp / acc.seconds;
            if (acc.ecn_seen) p.ecn_marked_per_second = acc.ecn / acc.seconds;
            if (acc.pause_seen) p.pause_occupancy = std::min(1.0, acc.paused_us / 1e6 / acc.seconds);
        }
        if (acc.loss_seen && acc.rcv_packets > 0)
            p.loss_per_million_packets = acc.lost / acc.rcv_packets * 1e6;
        out.ports.push_back(std::move(p));
    }
    return out;
}

Json NodeStatsAccumulator::to_json() const {
    return stallscope::to_json(finish(""));
}

Json to_json(const NodeStats& s) {
    Json o{{"version", kNodeStatsVersion},
           {"samples", s.samples},
           {"start", s.samples ? Json(format_rfc3339(s.start_time)) : Json(nullptr)},
           {"end", s.samples ? Json(format_rfc3339(s.end_time)) : Json(nullptr)},
           {"unix_start", s.samples ? Json(s.start_time) : Json(nullptr)},
           {"unix_end", s.samples ? Json(s.end_time) : Json(nullptr)},
           {"gpus_allocated", s.gpus_allocated},
           {"gpus_measured", s.gpus_measured()},
           {"mean_gpu_util_pct", rounded(s.mean_gpu_util_pct())}};
    o["gpus"] = Json::array();
    for (const auto& g : s.gpus)
        o["gpus"].push_back(Json{{"index", g.index},
                                 {"uuid", g.uuid},
                                 {"name", g.name},
                                 {"samples", g.samples},
                                 {"mean_util_pct", rounded(g.mean_util_pct)},
                                 {"mean_memory_pct", rounded(g.mean_memory_pct)},
                                 {"mean_power_w", rounded(g.mean_power_w)},
                                 {"max_temperature_c", rounded(g.max_temperature_c)},
                                 {"mean_sm_active_pct", rounded(g.mean_sm_active_pct)},
                                 {"mean_tensor_active_pct", rounded(g.mean_tensor_active_pct)},
                                 {"mean_dram_bandwidth_pct", rounded(g.mean_dram_bandwidth_pct)},
                                 {"throttle_share", rounded(g.throttle_share)},
                                 {"idle_share", rounded(g.idle_share)}});
    o["ports"] = Json::array();
    for (const auto& p : s.ports)
        o["ports"].push_back(Json{{"port", p.port},
                                  {"netdev", p.netdev},
                                  {"rx_bytes", rounded(p.rx_bytes)},
                                  {"tx_bytes", rounded(p.tx_bytes)},
                                  {"cnp_per_second", rounded(p.cnp_per_second)},
                                  {"ecn_marked_per_second", rounded(p.ecn_marked_per_second)},
                                  {"pause_occupancy", rounded(p.pause_occupancy)},
                                  {"loss_per_million_packets", rounded(p.loss_per_million_packets)}});
    return o;
}

NodeStats node_stats_from_json(const Json& object, std::vector<std::string>& problems) {
    const json_fields::Reader in{object, problems, "node_stats"};
    NodeStats s;
    s.samples = static_cast<int>(std::clamp<std::int64_t>(in.integer("samples").value_or(0), 0, 1 << 30));
    s.start_time = in.number("unix_start").value_or(0);
    s.end_time = in.number("unix_end").value_or(0);
    s.gpus_allocated =
        static_cast<int>(std::clamp<std::int64_t>(in.integer("gpus_allocated").value_or(0), 0, 1 << 20));
    s.gpus = in.objects<GpuStats>("gpus", [](const json_fields::Reader& g) {
        GpuStats out;
        out.index = static_cast<int>(std::clamp<std::int64_t>(g.integer("index").value_or(-1), -1, 1 << 20));
        out.uuid = g.string("uuid"), out.name = g.string("name");
        out.samples =
            static_cast<int>(std::clamp<std::int64_t>(g.integer("samples").value_or(0), 0, 1 << 30));
        out.mean_util_pct = g.number("mean_util_pct");
        out.mean_memory_pct = g.number("mean_memory_pct");
        out.mean_power_w = g.number("mean_power_w");
        out.max_temperature_c = g.number("max_temperature_c");
        out.mean_sm_active_pct = g.number("mean_sm_active_pct");
        out.mean_tensor_active_pct = g.number("mean_tensor_active_pct");
        out.mean_dram_bandwidth_pct = g.number("mean_dram_bandwidth_pct");
        out.throttle_share = g.number("throttle_share");
        out.idle_share = g.number("idle_share");
        return out;
    });
    s.ports = in.objects<PortStats>("ports", [](const json_fields::Reader& p) {
        PortStats out;
        out.port = p.string("port"), out.netdev = p.string("netdev");
        out.rx_bytes = p.number("rx_bytes"), out.tx_bytes = p.number("tx_bytes");
        out.cnp_per_second = p.number("cnp_per_second");
        out.ecn_marked_per_second = p.number("ecn_marked_per_second");
        out.pause_occupancy = p.number("pause_occupancy");
        out.loss_per_million_packets = p.number("loss_per_million_packets");
        return out;
    });
    return s;
}

}  // namespace stallscope
