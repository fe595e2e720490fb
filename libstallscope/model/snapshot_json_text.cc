#include "libstallscope/model/snapshot_json_text.h"

#include <cmath>
#include <cstdint>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/nccl_json.h"
#include "libstallscope/model/snapshot_json_text_depth.h"
#include "libstallscope/model/snapshot_json_text_writer.h"

namespace stallscope {
namespace {

using json_text::TextWriter;

void write_context(TextWriter& w, const JobContext& c, const Json* more) {
    w.open_object();
    w.member("scheduler", c.scheduler);
    w.member("job_id", c.job_id);
    w.member("step_id", c.step_id);
    w.member("job_name", c.job_name);
    w.member("user", c.user);
    w.member("nodelist", c.nodelist);
    w.member("node_id", c.node_id);
    w.member("gpus", c.gpus);
    w.member("visible_devices", c.visible_devices);
    w.member("pod", c.pod);
    w.member("namespace", c.namespace_name);
    if (more && more->is_object())
        for (const auto& [name, v] : more->get_ref<const Json::object_t&>()) {
            w.data_key(name);
            w.value(v);
        }
    w.close_object();
}

void write_host_stats(TextWriter& w, const HostStats& h) {
    w.open_object();
    w.member("load1", h.load1);
    w.member("load5", h.load5);
    w.member("load15", h.load15);
    w.member("mem_total_bytes", h.mem_total_bytes);
    w.member("mem_available_bytes", h.mem_available_bytes);
    w.member("procs_running", h.procs_running);
    w.member("procs_blocked", h.procs_blocked);
    w.member("oom_kills", h.oom_kills);
    w.key("psi");
    json_text::write_psi(w, h.psi);
    w.close_object();
}

void write_interface(TextWriter& w, const NetInterface& i) {
    w.open_object();
    w.member("name", i.name);
    w.member("rx_bytes", i.rx_bytes);
    w.member("rx_packets", i.rx_packets);
    w.member("rx_errors", i.rx_errors);
    w.member("rx_dropped", i.rx_dropped);
    w.member("rx_fifo", i.rx_fifo);
    w.member("rx_frame", i.rx_frame);
    w.member("rx_compressed", i.rx_compressed);
    w.member("rx_multicast", i.rx_multicast);
    w.member("tx_bytes", i.tx_bytes);
    w.member("tx_packets", i.tx_packets);
    w.member("tx_errors", i.tx_errors);
    w.member("tx_dropped", i.tx_dropped);
    w.member("tx_fifo", i.tx_fifo);
    w.member("tx_colls", i.tx_colls);
    w.member("tx_carrier", i.tx_carrier);
    w.member("tx_compressed", i.tx_compressed);
    w.member("pause", i.pause);
    w.close_object();
}

void write_rdma_port(TextWriter& w, const RdmaPort& p) {
    w.open_object();
    w.member("device", p.device);
    w.member("port", p.port);
    w.member("state", p.state);
    w.member("phys_state", p.phys_state);
    w.member("rate_gbps", p.rate_gbps);
    w.member("link_layer", p.link_layer);
    w.member("netdev", p.netdev);
    w.member("rx_bytes", p.rx_bytes);
    w.member("tx_bytes", p.tx_bytes);
    w.member("counters", p.counters);
    w.member("hw_counters", p.hw_counters);
    w.close_object();
}

void write_gpu(TextWriter& w, const Gpu& g) {
    w.open_object();
    w.member("index", g.index);
    w.member("uuid", g.uuid);
    w.member("pci_bus_id", g.pci_bus_id);
    w.member("name", g.name);
    w.member("vendor", g.vendor);
    w.member("minor_number", g.minor_number);
    w.member("utilization_pct", g.utilization_pct);
    w.member("memory_used_bytes", g.memory_used_bytes);
    w.member("memory_total_bytes", g.memory_total_bytes);
    w.member("temperature_c", g.temperature_c);
    w.member("power_w", g.power_w);
    w.member("power_limit_w", g.power_limit_w);
    w.member("sm_clock_mhz", g.sm_clock_mhz);
    w.member("max_sm_clock_mhz", g.max_sm_clock_mhz);
    w.member("throttle_reasons_mask", g.throttle_reasons_mask);
    w.member("throttle_reasons", g.throttle_reasons);
    w.member("violation_power_ns", g.violation_power_ns);
    w.member("violation_thermal_ns", g.violation_thermal_ns);
    w.member("ecc_uncorrected", g.ecc_uncorrected);
    w.member("ecc_corrected", g.ecc_corrected);
    w.member("remapped_rows_pending", g.remapped_rows_pending);
    w.member("remapped_rows_failure", g.remapped_rows_failure);
    w.member("energy_mj", g.energy_mj);
    w.member("xid", g.xid);
    json_text::write_gpu_depth_members(w, g);
    w.close_object();
}

void write_xid_event(TextWriter& w, const XidEvent& e) {
    w.open_object();
    w.member("code", e.code);
    w.member("pci_bus_id", e.pci_bus_id);
    w.member("gpu_index", e.gpu_index);
    w.member("severity", e.severity);
    w.member("message", e.message);
    w.close_object();
}

template <typename T>
void write_array(TextWriter& w, const std::vector<T>& items, void (*write_one)(TextWriter&, const T&)) {
    w.open_array();
    for (const auto& item : items) {
        w.separator();
        write_one(w, item);
    }
    w.close_array();
}

// to_json(Snapshot)'s members, in its order, with the sample line's additions to context and warnings.
void write_snapshot_members(TextWriter& w, const Snapshot& s, const Json* more_context,
                            std::span<const std::string> more_warnings) {
    w.member("schema", kSnapshotSchema);
    w.key("time");
    w.time_value(s.time);
    w.member("unix_time", s.time);
    w.member("host", s.host);
    w.key("context");
    write_context(w, s.context, more_context);
    w.key("host_stats");
    write_host_stats(w, s.host_stats);
    w.key("interfaces");
    write_array(w, s.interfaces, write_interface);
    w.key("rdma");
    write_array(w, s.rdma, write_rdma_port);
    w.key("gpus");
    write_array(w, s.gpus, write_gpu);
    w.key("xid_events");
    write_array(w, s.xid_events, write_xid_event);
    if (!s.nccl.empty()) w.member("nccl", nccl_to_json(s.nccl));
    if (s.job_cgroup) {
        w.key("job_cgroup");
        json_text::write_job_cgroup(w, *s.job_cgroup);
    }
    w.key("collector_failures");
    w.open_object();
    for (const auto& [name, why] : s.collector_failures) {
        w.data_key(name);
        w.value(why);
    }
    w.close_object();
    w.key("warnings");
    w.open_array();
    for (const auto& list : {std::span<const std::string>(s.warnings), more_warnings})
        for (const auto& warning : list) {
            w.separator();
            w.value(warning);
        }
    w.close_array();
}

// A delta as delta_table writes it: the rate alone, or the whole record when it reset or wrapped.
void write_delta_table(TextWriter& w, const DeltaTable& t) {
    w.open_object();
    for (const auto& [entity, row] : t) {
        w.data_key(entity);
        w.open_object();
        for (const auto& [name, d] : row) {
            w.data_key(name);
            if (!d.reset && !d.wrapped) {
                w.value(d.per_second);
                continue;
            }
            w.open_object();
            w.member("per_second", d.per_second);
            w.member("delta", d.delta);
            w.member("reset", d.reset);
            w.member("wrapped", d.wrapped);
            w.close_object();
        }
        w.close_object();
    }
    w.close_object();
}

void write_rates(TextWriter& w, const Rates& r) {
    w.open_object();
    w.member("interval_seconds", r.interval_seconds);
    w.key("host");
    write_delta_table(w, r.host);
    w.key("interfaces");
    write_delta_table(w, r.interfaces);
    w.key("rdma_counters");
    write_delta_table(w, r.rdma_counters);
    w.key("rdma_hw_counters");
    write_delta_table(w, r.rdma_hw_counters);
    w.key("gpus");
    write_delta_table(w, r.gpus);
    w.close_object();
}

// profile_json.cc's number_json: null when not finite, an integer when integral, else 4 decimals.
void write_rounded(TextWriter& w, double v) {
    if (!std::isfinite(v))
        w.null();
    else if (std::floor(v) == v && std::fabs(v) < 9.0e15)
        w.value(static_cast<std::int64_t>(v));
    else
        w.value(std::round(v * 10000.0) / 10000.0);
}

void write_reason(TextWriter& w, const Reason& r) {
    w.open_object();
    w.member("code", r.code);
    w.member("category", r.category);
    w.member("severity", r.severity);
    w.member("label", r.label);
    w.member("subject", r.subject);
    w.member("message", r.message);
    w.key("evidence");
    w.open_object();
    for (const auto& [name, v] : r.evidence) {
        w.data_key(name);
        if (const double* d = std::get_if<double>(&v))
            write_rounded(w, *d);
        else
            w.value(std::get<std::string>(v));
    }
    w.close_object();
    w.key("first_seen");
    w.time_value(r.first_seen);
    w.close_object();
}

void write_profile(TextWriter& w, const Profile& p) {
    w.open_object();
    w.member("label", p.label);
    w.key("confidence");
    write_rounded(w, p.confidence);
    w.key("reasons");
    write_array(w, p.reasons, write_reason);
    w.member("bottleneck_hint", p.bottleneck_hint);
    if (!p.unknown_reason.empty()) w.member("unknown_reason", p.unknown_reason);
    w.close_object();
}

}  // namespace

Json sample_line_to_json(const SampleLine& line) {
    Json out = to_json(line.snapshot);
    if (line.rates) json_fields::put(out, "rates", to_json(*line.rates));
    json_fields::put(out, "profile", to_json(line.profile));
    for (const auto& w : line.more_warnings) out["warnings"].push_back(w);
    if (line.more_context && line.more_context->is_object())
        for (const auto& [name, v] : line.more_context->get_ref<const Json::object_t&>())
            out["context"][name] = v;
    return out;
}

bool append_sample_line_json(std::string& out, const SampleLine& line) {
    TextWriter w(out);
    w.open_object();
    write_snapshot_members(w, line.snapshot, line.more_context, line.more_warnings);
    if (line.rates) {
        w.key("rates");
        write_rates(w, *line.rates);
    }
    w.key("profile");
    write_profile(w, line.profile);
    w.close_object();
    return w.ok();
}

bool append_snapshot_json(std::string& out, const Snapshot& snapshot) {
    TextWriter w(out);
    w.open_object();
    write_snapshot_members(w, snapshot, nullptr, {});
    w.close_object();
    return w.ok();
}

bool append_rates_json(std::string& out, const Rates& rates) {
    TextWriter w(out);
    write_rates(w, rates);
    return w.ok();
}

bool append_profile_json(std::string& out, const Profile& profile) {
    TextWriter w(out);
    write_profile(w, profile);
    return w.ok();
}

}  // namespace stallscope
