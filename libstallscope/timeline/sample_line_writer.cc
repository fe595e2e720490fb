// append_sample_line: the snapshot JSON written straight into a string, byte for byte what
// to_json(snapshot).dump() gives (tests/unit/sample_line_test.cc holds the two to that), without building
// the ordered_json tree of ~1000 counters per sample and tearing it down again.
#include <charconv>
#include <cmath>
#include <nlohmann/detail/conversions/to_chars.hpp>

#include "libstallscope/model/nccl_json.h"
#include "libstallscope/timeline/sample_line.h"

namespace stallscope {
namespace {

class Writer {
  public:
    explicit Writer(std::string& out) : out_(out) {}

    void begin_object() { open('{'); }
    void end_object() { close('}'); }
    void begin_array() { open('['); }
    void end_array() { close(']'); }
    // A member name known to need no escaping (the schema's own keys).
    Writer& key(const char* name) {
        separate();
        out_.push_back('"');
        out_.append(name);
        out_.append("\":");
        first_ = true;  // the value that follows needs no comma
        return *this;
    }
    // A member name from the data (counter names, collector names).
    Writer& data_key(std::string_view name) {
        separate();
        escaped(name);
        out_.push_back(':');
        first_ = true;
        return *this;
    }

    void string(std::string_view v) {
        separate();
        escaped(v);
    }
    void u64(std::uint64_t v) {
        separate();
        integer(v);
    }
    void i64(std::int64_t v) {
        separate();
        integer(v);
    }
    void number(double v) {
        separate();
        if (!std::isfinite(v)) {  // as nlohmann dumps NaN/inf
            out_.append("null");
            return;
        }
        char buf[64];
        const char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
        out_.append(buf, static_cast<std::size_t>(end - buf));
    }
    void null() {
        separate();
        out_.append("null");
    }
    void counter(const Counter& c) { c ? u64(*c) : null(); }
    void gauge(const Gauge& g) { g ? number(*g) : null(); }
    void strings(const std::vector<std::string>& v) {
        begin_array();
        for (const auto& s : v) string(s);
        end_array();
    }
    void counters(const CounterMap& m) {
        begin_object();
        for (const auto& [name, value] : m) {
            data_key(name);
            counter(value);
        }
        end_object();
    }
    // A value only the Json DOM writes (rare members such as "nccl"): dumped as nlohmann dumps it.
    void json(const Json& v) {
        separate();
        out_.append(v.dump(-1, ' ', false, Json::error_handler_t::replace));
    }

  private:
    // Before every value and member: a comma unless it is the first in its container.
    void separate() {
        if (!first_) out_.push_back(',');
        first_ = false;
    }
    void open(char c) {
        separate();
        out_.push_back(c);
        first_ = true;
    }
    void close(char c) {
        out_.push_back(c);
        first_ = false;
    }
    template <typename T>
    void integer(T v) {
        char buf[24];
        const auto r = std::to_chars(buf, buf + sizeof buf, v);
        out_.append(buf, static_cast<std::size_t>(r.ptr - buf));
    }
    // Plain printable ASCII is copied; anything else (escapes, UTF-8, invalid bytes) is left to nlohmann's
    // own escaping so the bytes stay identical to to_json(...).dump().
    void escaped(std::string_view v) {
        bool plain = true;
        for (const char ch : v) {
            const auto c = static_cast<unsigned char>(ch);
            if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
                plain = false;
                break;
            }
        }
        if (!plain) {
            out_.append(Json(std::string(v)).dump(-1, ' ', false, Json::error_handler_t::replace));
            return;
        }
        out_.push_back('"');
        out_.append(v);
        out_.push_back('"');
    }

    std::string& out_;
    bool first_ = true;
};

void write_psi(Writer& w, const Psi& p) {
    w.begin_object();
    w.key("cpu_some_avg10").gauge(p.cpu_some_avg10);
    w.key("cpu_some_avg60").gauge(p.cpu_some_avg60);
    w.key("io_some_avg10").gauge(p.io_some_avg10);
    w.key("io_some_avg60").gauge(p.io_some_avg60);
    w.key("io_full_avg10").gauge(p.io_full_avg10);
    w.key("io_full_avg60").gauge(p.io_full_avg60);
    w.key("memory_some_avg10").gauge(p.memory_some_avg10);
    w.key("memory_some_avg60").gauge(p.memory_some_avg60);
    w.key("memory_full_avg10").gauge(p.memory_full_avg10);
    w.key("memory_full_avg60").gauge(p.memory_full_avg60);
    w.key("cpu_some_total_us").counter(p.cpu_some_total_us);
    w.key("io_some_total_us").counter(p.io_some_total_us);
    w.key("io_full_total_us").counter(p.io_full_total_us);
    w.key("memory_some_total_us").counter(p.memory_some_total_us);
    w.key("memory_full_total_us").counter(p.memory_full_total_us);
    w.end_object();
}

void write_context(Writer& w, const JobContext& c) {
    w.begin_object();
    w.key("scheduler").string(c.scheduler);
    w.key("job_id").string(c.job_id);
    w.key("step_id").string(c.step_id);
    w.key("job_name").string(c.job_name);
    w.key("user").string(c.user);
    w.key("nodelist").string(c.nodelist);
    w.key("node_id").string(c.node_id);
    w.key("gpus").strings(c.gpus);
    w.key("visible_devices").strings(c.visible_devices);
    w.key("pod").string(c.pod);
    w.key("namespace").string(c.namespace_name);
    w.end_object();
}

void write_host_stats(Writer& w, const HostStats& h) {
    w.begin_object();
    w.key("load1").gauge(h.load1);
    w.key("load5").gauge(h.load5);
    w.key("load15").gauge(h.load15);
    w.key("mem_total_bytes").counter(h.mem_total_bytes);
    w.key("mem_available_bytes").counter(h.mem_available_bytes);
    w.key("procs_running").counter(h.procs_running);
    w.key("procs_blocked").counter(h.procs_blocked);
    w.key("oom_kills").counter(h.oom_kills);
    w.key("psi");
    write_psi(w, h.psi);
    w.end_object();
}

void write_interface(Writer& w, const NetInterface& i) {
    w.begin_object();
    w.key("name").string(i.name);
    w.key("rx_bytes").counter(i.rx_bytes);
    w.key("rx_packets").counter(i.rx_packets);
    w.key("rx_errors").counter(i.rx_errors);
    w.key("rx_dropped").counter(i.rx_dropped);
    w.key("rx_fifo").counter(i.rx_fifo);
    w.key("rx_frame").counter(i.rx_frame);
    w.key("rx_compressed").counter(i.rx_compressed);
    w.key("rx_multicast").counter(i.rx_multicast);
    w.key("tx_bytes").counter(i.tx_bytes);
    w.key("tx_packets").counter(i.tx_packets);
    w.key("tx_errors").counter(i.tx_errors);
    w.key("tx_dropped").counter(i.tx_dropped);
    w.key("tx_fifo").counter(i.tx_fifo);
    w.key("tx_colls").counter(i.tx_colls);
    w.key("tx_carrier").counter(i.tx_carrier);
    w.key("tx_compressed").counter(i.tx_compressed);
    w.key("pause").counters(i.pause);
    w.end_object();
}

void write_rdma(Writer& w, const RdmaPort& p) {
    w.begin_object();
    w.key("device").string(p.device);
    w.key("port").i64(p.port);
    w.key("state").string(p.state);
    w.key("phys_state").string(p.phys_state);
    w.key("rate_gbps").gauge(p.rate_gbps);
    w.key("link_layer").string(p.link_layer);
    w.key("netdev").string(p.netdev);
    w.key("rx_bytes").counter(p.rx_bytes);
    w.key("tx_bytes").counter(p.tx_bytes);
    w.key("counters").counters(p.counters);
    w.key("hw_counters").counters(p.hw_counters);
    w.end_object();
}

void write_gpu(Writer& w, const Gpu& g) {
    w.begin_object();
    w.key("index").i64(g.index);
    w.key("uuid").string(g.uuid);
    w.key("pci_bus_id").string(g.pci_bus_id);
    w.key("name").string(g.name);
    w.key("vendor").string(g.vendor);
    w.key("minor_number");
    g.minor_number ? w.i64(*g.minor_number) : w.null();
    w.key("utilization_pct").gauge(g.utilization_pct);
    w.key("memory_used_bytes").counter(g.memory_used_bytes);
    w.key("memory_total_bytes").counter(g.memory_total_bytes);
    w.key("temperature_c").gauge(g.temperature_c);
    w.key("power_w").gauge(g.power_w);
    w.key("power_limit_w").gauge(g.power_limit_w);
    w.key("sm_clock_mhz").counter(g.sm_clock_mhz);
    w.key("max_sm_clock_mhz").counter(g.max_sm_clock_mhz);
    w.key("throttle_reasons_mask").counter(g.throttle_reasons_mask);
    w.key("throttle_reasons").strings(g.throttle_reasons);
    w.key("violation_power_ns").counter(g.violation_power_ns);
    w.key("violation_thermal_ns").counter(g.violation_thermal_ns);
    w.key("ecc_uncorrected").counter(g.ecc_uncorrected);
    w.key("ecc_corrected").counter(g.ecc_corrected);
    w.key("remapped_rows_pending").counter(g.remapped_rows_pending);
    w.key("remapped_rows_failure").counter(g.remapped_rows_failure);
    w.key("energy_mj").counter(g.energy_mj);
    w.key("xid");
    w.begin_array();
    for (const int code : g.xid) w.i64(code);
    w.end_array();
    w.end_object();
}

void write_xid_event(Writer& w, const XidEvent& e) {
    w.begin_object();
    w.key("code").i64(e.code);
    w.key("pci_bus_id").string(e.pci_bus_id);
    w.key("gpu_index").i64(e.gpu_index);
    w.key("severity").string(e.severity);
    w.key("message").string(e.message);
    w.end_object();
}

// Same rounding as the profile JSON's numbers: 4 decimals, integral values as integers.
void write_confidence(Writer& w, double v) {
    if (!std::isfinite(v))
        w.null();
    else if (std::floor(v) == v && std::fabs(v) < 9.0e15)
        w.i64(static_cast<std::int64_t>(v));
    else
        w.number(std::round(v * 10000.0) / 10000.0);
}

void write_summary(Writer& w, const Profile& p) {
    w.begin_object();
    w.key("label").string(p.label);
    w.key("confidence");
    write_confidence(w, p.confidence);
    w.key("bottleneck_hint").string(p.bottleneck_hint);
    // "code:subject", root cause first, as the job comment's top= names it.
    w.key("reasons");
    w.begin_array();
    std::string reason;
    for (const auto& r : p.reasons) {
        reason = r.code;
        if (!r.subject.empty()) reason.append(":").append(r.subject);
        w.string(reason);
    }
    w.end_array();
    if (!p.unknown_reason.empty()) w.key("unknown_reason").string(p.unknown_reason);
    w.end_object();
}

}  // namespace

void append_sample_line(std::string& out, const Snapshot& s, const Profile& profile) {
    Writer w(out);
    w.begin_object();
    w.key("type").string("sample");
    // From here on, the keys, order and values of to_json(const Snapshot&) (model/snapshot_json.cc).
    w.key("schema").string(kSnapshotSchema);
    w.key("time").string(format_rfc3339(s.time));
    w.key("unix_time").number(s.time);
    w.key("host").string(s.host);
    w.key("context");
    write_context(w, s.context);
    w.key("host_stats");
    write_host_stats(w, s.host_stats);
    w.key("interfaces");
    w.begin_array();
    for (const auto& i : s.interfaces) write_interface(w, i);
    w.end_array();
    w.key("rdma");
    w.begin_array();
    for (const auto& p : s.rdma) write_rdma(w, p);
    w.end_array();
    w.key("gpus");
    w.begin_array();
    for (const auto& g : s.gpus) write_gpu(w, g);
    w.end_array();
    w.key("xid_events");
    w.begin_array();
    for (const auto& e : s.xid_events) write_xid_event(w, e);
    w.end_array();
    if (!s.nccl.empty()) w.key("nccl").json(nccl_to_json(s.nccl));
    w.key("collector_failures");
    w.begin_object();
    for (const auto& [name, why] : s.collector_failures) w.data_key(name).string(why);
    w.end_object();
    w.key("warnings").strings(s.warnings);
    // Until here to_json(snapshot); then what the profiler made of the sample, in brief.
    w.key("summary");
    write_summary(w, profile);
    w.end_object();
}

}  // namespace stallscope
