#include "libstallscope/model/snapshot_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/nccl_json.h"
#include "libstallscope/model/snapshot_json_depth.h"

namespace stallscope {
namespace {

using json_fields::or_null;
using json_fields::Reader;

Json counters(const CounterMap& m) {
    Json o = Json::object();
    for (const auto& [k, v] : m) o[k] = or_null(v);
    return o;
}

CounterMap read_counters(const Reader& r, const char* key) {
    CounterMap m;
    const Json* v = r.find(key);
    if (!v) return m;
    if (!v->is_object()) {
        r.wrong_type(key, "an object of counters");
        return m;
    }
    Reader inner{*v, r.problems, r.where.empty() ? key : r.where + "." + key};
    for (auto it = v->begin(); it != v->end(); ++it) m[it.key()] = inner.u64(it.key().c_str());
    return m;
}

Json interface_json(const NetInterface& i) {
    Json o{{"name", i.name}};
    o["rx_bytes"] = or_null(i.rx_bytes);
    o["rx_packets"] = or_null(i.rx_packets);
    o["rx_errors"] = or_null(i.rx_errors);
    o["rx_dropped"] = or_null(i.rx_dropped);
    o["rx_fifo"] = or_null(i.rx_fifo);
    o["rx_frame"] = or_null(i.rx_frame);
    o["rx_compressed"] = or_null(i.rx_compressed);
    o["rx_multicast"] = or_null(i.rx_multicast);
    o["tx_bytes"] = or_null(i.tx_bytes);
    o["tx_packets"] = or_null(i.tx_packets);
    o["tx_errors"] = or_null(i.tx_errors);
    o["tx_dropped"] = or_null(i.tx_dropped);
    o["tx_fifo"] = or_null(i.tx_fifo);
    o["tx_colls"] = or_null(i.tx_colls);
    o["tx_carrier"] = or_null(i.tx_carrier);
    o["tx_compressed"] = or_null(i.tx_compressed);
    o["pause"] = counters(i.pause);
    return o;
}

Json rdma_json(const RdmaPort& p) {
    return Json{{"device", p.device},
                {"port", p.port},
                {"state", p.state},
                {"phys_state", p.phys_state},
                {"rate_gbps", or_null(p.rate_gbps)},
                {"link_layer", p.link_layer},
                {"netdev", p.netdev},
                {"rx_bytes", or_null(p.rx_bytes)},
                {"tx_bytes", or_null(p.tx_bytes)},
                {"counters", counters(p.counters)},
                {"hw_counters", counters(p.hw_counters)}};
}

Json gpu_json(const Gpu& g) {
    Json o{{"index", g.index},
           {"uuid", g.uuid},
           {"pci_bus_id", g.pci_bus_id},
           {"name", g.name},
           {"vendor", g.vendor}};
    o["minor_number"] = g.minor_number ? Json(*g.minor_number) : Json(nullptr);
    o["utilization_pct"] = or_null(g.utilization_pct);
    o["memory_used_bytes"] = or_null(g.memory_used_bytes);
    o["memory_total_bytes"] = or_null(g.memory_total_bytes);
    o["temperature_c"] = or_null(g.temperature_c);
    o["power_w"] = or_null(g.power_w);
    o["power_limit_w"] = or_null(g.power_limit_w);
    o["sm_clock_mhz"] = or_null(g.sm_clock_mhz);
    o["max_sm_clock_mhz"] = or_null(g.max_sm_clock_mhz);
    o["throttle_reasons_mask"] = or_null(g.throttle_reasons_mask);
    o["throttle_reasons"] = g.throttle_reasons;
    o["violation_power_ns"] = or_null(g.violation_power_ns);
    o["violation_thermal_ns"] = or_null(g.violation_thermal_ns);
    o["ecc_uncorrected"] = or_null(g.ecc_uncorrected);
    o["ecc_corrected"] = or_null(g.ecc_corrected);
    o["remapped_rows_pending"] = or_null(g.remapped_rows_pending);
    o["remapped_rows_failure"] = or_null(g.remapped_rows_failure);
    o["energy_mj"] = or_null(g.energy_mj);
    o["xid"] = g.xid;
    add_gpu_depth_json(g, o);
    return o;
}

Json context_json(const JobContext& c) {
    return Json{{"scheduler", c.scheduler},
                {"job_id", c.job_id},
                {"step_id", c.step_id},
                {"job_name", c.job_name},
                {"user", c.user},
                {"nodelist", c.nodelist},
                {"node_id", c.node_id},
                {"gpus", c.gpus},
                {"visible_devices", c.visible_devices},
                {"pod", c.pod},
                {"namespace", c.namespace_name}};
}

Json delta_table(const DeltaTable& t) {
    Json o = Json::object();
    for (const auto& [entity, row] : t) {
        Json r = Json::object();
        for (const auto& [name, d] : row) {
            if (d.reset || d.wrapped)
                r[name] = Json{{"per_second", d.per_second},
                               {"delta", d.delta},
                               {"reset", d.reset},
                               {"wrapped", d.wrapped}};
            else
                r[name] = d.per_second;
        }
        o[entity] = std::move(r);
    }
    return o;
}

NetInterface read_interface(const Reader& r) {
    NetInterface i;
    i.name = r.string("name");
    i.rx_bytes = r.u64("rx_bytes");
    i.rx_packets = r.u64("rx_packets");
    i.rx_errors = r.u64("rx_errors");
    i.rx_dropped = r.u64("rx_dropped");
    i.rx_fifo = r.u64("rx_fifo");
    i.rx_frame = r.u64("rx_frame");
    i.rx_compressed = r.u64("rx_compressed");
    i.rx_multicast = r.u64("rx_multicast");
    i.tx_bytes = r.u64("tx_bytes");
    i.tx_packets = r.u64("tx_packets");
    i.tx_errors = r.u64("tx_errors");
    i.tx_dropped = r.u64("tx_dropped");
    i.tx_fifo = r.u64("tx_fifo");
    i.tx_colls = r.u64("tx_colls");
    i.tx_carrier = r.u64("tx_carrier");
    i.tx_compressed = r.u64("tx_compressed");
    i.pause = read_counters(r, "pause");
    return i;
}

RdmaPort read_rdma(const Reader& r) {
    RdmaPort p;
    p.device = r.string("device");
    p.port = static_cast<int>(r.integer("port").value_or(0));
    p.state = r.string("state");
    p.phys_state = r.string("phys_state");
    p.rate_gbps = r.number("rate_gbps");
    p.link_layer = r.string("link_layer");
    p.netdev = r.string("netdev");
    p.counters = read_counters(r, "counters");
    p.hw_counters = read_counters(r, "hw_counters");
    p.rx_bytes = r.u64("rx_bytes");
    p.tx_bytes = r.u64("tx_bytes");
    return p;
}

Gpu read_gpu(const Reader& r) {
    Gpu g;
    g.index = static_cast<int>(r.integer("index").value_or(-1));
    g.uuid = r.string("uuid");
    g.pci_bus_id = r.string("pci_bus_id");
    g.name = r.string("name");
    g.vendor = r.string("vendor");
    if (auto m = r.integer("minor_number")) g.minor_number = static_cast<int>(*m);
    g.utilization_pct = r.number("utilization_pct");
    g.memory_used_bytes = r.u64("memory_used_bytes");
    g.memory_total_bytes = r.u64("memory_total_bytes");
    g.temperature_c = r.number("temperature_c");
    g.power_w = r.number("power_w");
    g.power_limit_w = r.number("power_limit_w");
    g.sm_clock_mhz = r.u64("sm_clock_mhz");
    g.max_sm_clock_mhz = r.u64("max_sm_clock_mhz");
    g.throttle_reasons_mask = r.u64("throttle_reasons_mask");
    g.throttle_reasons = r.strings("throttle_reasons");
    g.violation_power_ns = r.u64("violation_power_ns");
    g.violation_thermal_ns = r.u64("violation_thermal_ns");
    g.ecc_uncorrected = r.u64("ecc_uncorrected");
    g.ecc_corrected = r.u64("ecc_corrected");
    g.remapped_rows_pending = r.u64("remapped_rows_pending");
    g.remapped_rows_failure = r.u64("remapped_rows_failure");
    g.energy_mj = r.u64("energy_mj");
    if (const Json* x = r.find("xid"); x && x->is_array())
        for (const auto& code : *x)
            if (code.is_number_integer()) g.xid.push_back(code.get<int>());
    read_gpu_depth(r, g);
    return g;
}

XidEvent read_xid(const Reader& r) {
    XidEvent e;
    e.code = static_cast<int>(r.integer("code").value_or(0));
    e.pci_bus_id = r.string("pci_bus_id");
    e.gpu_index = static_cast<int>(r.integer("gpu_index").value_or(-1));
    e.severity = r.string("severity");
    e.message = r.string("message");
    return e;
}

}  // namespace

std::string format_rfc3339(double epoch_seconds) {
    // Years 0001-9999 only (four digits): a hand-edited or corrupt timeline's 1e29 must not reach the
    // time_t conversion, which is undefined behaviour out of range (found by fuzzing replay).
    constexpr double kFirst = -62135596800.0, kLast = 253402300799.0;  // 0001-01-01, 9999-12-31T23:59:59
    if (!std::isfinite(epoch_seconds)) epoch_seconds = 0;
    epoch_seconds = std::clamp(epoch_seconds, kFirst, kLast);
    double whole = std::floor(epoch_seconds);
    int millis = static_cast<int>(std::lround((epoch_seconds - whole) * 1000.0));
    if (millis == 1000) {
        whole += 1;
        millis = 0;
    }
    const std::time_t t = static_cast<std::time_t>(whole);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[96];  // room for any int the compiler cannot rule out (-Wformat-truncation)
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    return buf;
}

std::optional<double> parse_rfc3339(const std::string& text) {
    std::tm tm{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
        return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    double fraction = 0;
    std::size_t pos = static_cast<std::size_t>(consumed);
    if (pos < text.size() && text[pos] == '.') {
        double scale = 0.1;
        for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, scale /= 10)
            fraction += (text[pos] - '0') * scale;
    }
    const std::string zone = text.substr(pos);
    if (zone != "Z" && zone != "+00:00" && zone != "z") return std::nullopt;
    return static_cast<double>(::timegm(&tm)) + fraction;
}

Json to_json(const Snapshot& s) {
    Json o{{"schema", kSnapshotSchema},
           {"time", format_rfc3339(s.time)},
           {"unix_time", s.time},
           {"host", s.host}};
    o["context"] = context_json(s.context);
    const auto& h = s.host_stats;
    o["host_stats"] = Json{{"load1", or_null(h.load1)},
                           {"load5", or_null(h.load5)},
                           {"load15", or_null(h.load15)},
                           {"mem_total_bytes", or_null(h.mem_total_bytes)},
                           {"mem_available_bytes", or_null(h.mem_available_bytes)},
                           {"procs_running", or_null(h.procs_running)},
                           {"procs_blocked", or_null(h.procs_blocked)},
                           {"oom_kills", or_null(h.oom_kills)},
                           {"psi", psi_to_json(h.psi)}};
    o["interfaces"] = Json::array();
    for (const auto& i : s.interfaces) o["interfaces"].push_back(interface_json(i));
    o["rdma"] = Json::array();
    for (const auto& p : s.rdma) o["rdma"].push_back(rdma_json(p));
    o["gpus"] = Json::array();
    for (const auto& g : s.gpus) o["gpus"].push_back(gpu_json(g));
    o["xid_events"] = Json::array();
    for (const auto& e : s.xid_events)
        o["xid_events"].push_back(Json{{"code", e.code},
                                       {"pci_bus_id", e.pci_bus_id},
                                       {"gpu_index", e.gpu_index},
                                       {"severity", e.severity},
                                       {"message", e.message}});
    if (!s.nccl.empty()) o["nccl"] = nccl_to_json(s.nccl);
    if (s.job_cgroup) o["job_cgroup"] = job_cgroup_to_json(*s.job_cgroup);
    o["collector_failures"] = Json::object();
    for (const auto& [k, v] : s.collector_failures) o["collector_failures"][k] = v;
    o["warnings"] = s.warnings;
    return o;
}

Json to_json(const Rates& r) {
    return Json{{"interval_seconds", r.interval_seconds},
                {"host", delta_table(r.host)},
                {"interfaces", delta_table(r.interfaces)},
                {"rdma_counters", delta_table(r.rdma_counters)},
                {"rdma_hw_counters", delta_table(r.rdma_hw_counters)},
                {"gpus", delta_table(r.gpus)}};
}

Snapshot snapshot_from_json(const Json& object, std::vector<std::string>& problems) {
    Snapshot s;
    Reader r{object, problems, ""};
    if (auto unix_time = r.number("unix_time")) {
        s.time = *unix_time;
    } else if (const Json* time_field = r.find("time"); time_field && time_field->is_number()) {
        s.time = time_field->get<double>();
    } else if (time_field && time_field->is_string()) {
        if (auto parsed = parse_rfc3339(time_field->get<std::string>()))
            s.time = *parsed;
        else
            problems.push_back("time: not RFC 3339");
    }
    s.host = r.string("host");
    if (const Json* c = r.find("context"); c && c->is_object()) {
        Reader cr{*c, problems, "context"};
        s.context.scheduler = cr.string("scheduler");
        if (s.context.scheduler.empty()) s.context.scheduler = "none";
        s.context.job_id = cr.string("job_id");
        s.context.step_id = cr.string("step_id");
        s.context.job_name = cr.string("job_name");
        s.context.user = cr.string("user");
        s.context.nodelist = cr.string("nodelist");
        s.context.node_id = cr.string("node_id");
        s.context.gpus = cr.strings("gpus");
        s.context.visible_devices = cr.strings("visible_devices");
        s.context.pod = cr.string("pod");
        s.context.namespace_name = cr.string("namespace");
    }
    if (const Json* h = r.find("host_stats"); h && h->is_object()) {
        Reader hr{*h, problems, "host_stats"};
        auto& hs = s.host_stats;
        hs.load1 = hr.number("load1");
        hs.load5 = hr.number("load5");
        hs.load15 = hr.number("load15");
        hs.mem_total_bytes = hr.u64("mem_total_bytes");
        hs.mem_available_bytes = hr.u64("mem_available_bytes");
        hs.procs_running = hr.u64("procs_running");
        hs.procs_blocked = hr.u64("procs_blocked");
        hs.oom_kills = hr.u64("oom_kills");
        if (const Json* p = hr.find("psi"); p && p->is_object())
            hs.psi = read_psi(Reader{*p, problems, "host_stats.psi"});
    }
    s.interfaces = r.objects<NetInterface>("interfaces", read_interface);
    s.rdma = r.objects<RdmaPort>("rdma", read_rdma);
    s.gpus = r.objects<Gpu>("gpus", read_gpu);
    s.xid_events = r.objects<XidEvent>("xid_events", read_xid);
    if (const Json* n = r.find("nccl"); n && n->is_object()) s.nccl = nccl_from_json(*n, problems);
    if (const Json* c = r.find("job_cgroup"); c && c->is_object())
        s.job_cgroup = read_job_cgroup(Reader{*c, problems, "job_cgroup"});
    if (const Json* f = r.find("collector_failures"); f && f->is_object())
        for (auto it = f->begin(); it != f->end(); ++it)
            s.collector_failures[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    s.warnings = r.strings("warnings");
    return s;
}

}  // namespace stallscope
