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
using json_fields::put;
using json_fields::Reader;

Json counters(const CounterMap& m) {
    Json o = json_fields::object_of(m.size());
    for (const auto& [k, v] : m) put(o, k, or_null(v));
    return o;
}

// A counter map's value; a wrong type is a problem named like Reader::wrong_type would name it, with
// the "<where>.<key>" prefix built only then (re-reading a port must not allocate).
std::optional<std::uint64_t> counter_value(const Reader& r, const char* key, const std::string& name,
                                           const Json& value) {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer() && value.get<std::int64_t>() >= 0) return value.get<std::uint64_t>();
    if (!value.is_null())
        r.problems.push_back((r.where.empty() ? std::string(key) : r.where + "." + key) + "." + name +
                             ": expected an unsigned integer");
    return std::nullopt;
}

// Into `m`: when the object holds the same names as `m` already does (the same port, one second
// later), only the values are assigned, so re-reading a sample allocates nothing. Each item's value is
// read directly (a find per key would search the object again).
void read_counters(const Reader& r, const char* key, CounterMap& m) {
    const Json* v = r.find(key);
    if (!v || !v->is_object()) {
        if (v) r.wrong_type(key, "an object of counters");
        m.clear();
        return;
    }
    const Json::object_t::Container& items = v->get_ref<const Json::object_t&>();  // indexable
    bool same_names = items.size() == m.size();
    auto it = m.begin();
    for (std::size_t i = 0; same_names && i < items.size(); ++i, ++it)
        same_names = it->first == items[i].first;
    if (same_names) {
        it = m.begin();
        for (const auto& [name, value] : items) (it++)->second = counter_value(r, key, name, value);
        return;
    }
    m.clear();
    for (const auto& [name, value] : items)
        m.insert_or_assign(m.end(), name, counter_value(r, key, name, value));
}

Json interface_json(const NetInterface& i) {
    Json o = json_fields::object_of(18);
    put(o, "name", i.name);
    put(o, "rx_bytes", or_null(i.rx_bytes));
    put(o, "rx_packets", or_null(i.rx_packets));
    put(o, "rx_errors", or_null(i.rx_errors));
    put(o, "rx_dropped", or_null(i.rx_dropped));
    put(o, "rx_fifo", or_null(i.rx_fifo));
    put(o, "rx_frame", or_null(i.rx_frame));
    put(o, "rx_compressed", or_null(i.rx_compressed));
    put(o, "rx_multicast", or_null(i.rx_multicast));
    put(o, "tx_bytes", or_null(i.tx_bytes));
    put(o, "tx_packets", or_null(i.tx_packets));
    put(o, "tx_errors", or_null(i.tx_errors));
    put(o, "tx_dropped", or_null(i.tx_dropped));
    put(o, "tx_fifo", or_null(i.tx_fifo));
    put(o, "tx_colls", or_null(i.tx_colls));
    put(o, "tx_carrier", or_null(i.tx_carrier));
    put(o, "tx_compressed", or_null(i.tx_compressed));
    put(o, "pause", counters(i.pause));
    return o;
}

Json rdma_json(const RdmaPort& p) {
    Json o = json_fields::object_of(11);
    put(o, "device", p.device);
    put(o, "port", p.port);
    put(o, "state", p.state);
    put(o, "phys_state", p.phys_state);
    put(o, "rate_gbps", or_null(p.rate_gbps));
    put(o, "link_layer", p.link_layer);
    put(o, "netdev", p.netdev);
    put(o, "rx_bytes", or_null(p.rx_bytes));
    put(o, "tx_bytes", or_null(p.tx_bytes));
    put(o, "counters", counters(p.counters));
    put(o, "hw_counters", counters(p.hw_counters));
    return o;
}

Json gpu_json(const Gpu& g) {
    Json o = json_fields::object_of(32);
    put(o, "index", g.index);
    put(o, "uuid", g.uuid);
    put(o, "pci_bus_id", g.pci_bus_id);
    put(o, "name", g.name);
    put(o, "vendor", g.vendor);
    put(o, "minor_number", or_null(g.minor_number));
    put(o, "utilization_pct", or_null(g.utilization_pct));
    put(o, "memory_used_bytes", or_null(g.memory_used_bytes));
    put(o, "memory_total_bytes", or_null(g.memory_total_bytes));
    put(o, "temperature_c", or_null(g.temperature_c));
    put(o, "power_w", or_null(g.power_w));
    put(o, "power_limit_w", or_null(g.power_limit_w));
    put(o, "sm_clock_mhz", or_null(g.sm_clock_mhz));
    put(o, "max_sm_clock_mhz", or_null(g.max_sm_clock_mhz));
    put(o, "throttle_reasons_mask", or_null(g.throttle_reasons_mask));
    put(o, "throttle_reasons", g.throttle_reasons);
    put(o, "violation_power_ns", or_null(g.violation_power_ns));
    put(o, "violation_thermal_ns", or_null(g.violation_thermal_ns));
    put(o, "ecc_uncorrected", or_null(g.ecc_uncorrected));
    put(o, "ecc_corrected", or_null(g.ecc_corrected));
    put(o, "remapped_rows_pending", or_null(g.remapped_rows_pending));
    put(o, "remapped_rows_failure", or_null(g.remapped_rows_failure));
    put(o, "energy_mj", or_null(g.energy_mj));
    put(o, "xid", g.xid);
    add_gpu_depth_json(g, o);
    return o;
}

Json context_json(const JobContext& c) {
    Json o = json_fields::object_of(11);
    put(o, "scheduler", c.scheduler);
    put(o, "job_id", c.job_id);
    put(o, "step_id", c.step_id);
    put(o, "job_name", c.job_name);
    put(o, "user", c.user);
    put(o, "nodelist", c.nodelist);
    put(o, "node_id", c.node_id);
    put(o, "gpus", c.gpus);
    put(o, "visible_devices", c.visible_devices);
    put(o, "pod", c.pod);
    put(o, "namespace", c.namespace_name);
    return o;
}

// The element readers assign every field of an existing element (re-reading one sample's port into the
// last sample's reuses its maps and strings); the returning forms read into a fresh one.
void read_interface(const Reader& r, NetInterface& i) {
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
    read_counters(r, "pause", i.pause);
}

void read_rdma(const Reader& r, RdmaPort& p) {
    p.device = r.string("device");
    p.port = static_cast<int>(r.integer("port").value_or(0));
    p.state = r.string("state");
    p.phys_state = r.string("phys_state");
    p.rate_gbps = r.number("rate_gbps");
    p.link_layer = r.string("link_layer");
    p.netdev = r.string("netdev");
    read_counters(r, "counters", p.counters);
    read_counters(r, "hw_counters", p.hw_counters);
    p.rx_bytes = r.u64("rx_bytes");
    p.tx_bytes = r.u64("tx_bytes");
}

void read_gpu(const Reader& r, Gpu& g) {
    g.index = static_cast<int>(r.integer("index").value_or(-1));
    g.uuid = r.string("uuid");
    g.pci_bus_id = r.string("pci_bus_id");
    g.name = r.string("name");
    g.vendor = r.string("vendor");
    g.minor_number.reset();
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
    g.xid.clear();
    if (const Json* x = r.find("xid"); x && x->is_array())
        for (const auto& code : *x)
            if (code.is_number_integer()) g.xid.push_back(code.get<int>());
    read_gpu_depth(r, g);
}

template <typename T>
T read_fresh(const Reader& r, void (*read_into)(const Reader&, T&)) {
    T t;
    read_into(r, t);
    return t;
}
NetInterface read_interface(const Reader& r) {
    return read_fresh<NetInterface>(r, read_interface);
}
RdmaPort read_rdma(const Reader& r) {
    return read_fresh<RdmaPort>(r, read_rdma);
}
Gpu read_gpu(const Reader& r) {
    return read_fresh<Gpu>(r, read_gpu);
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

Json xid_event_json(const XidEvent& e) {
    Json o = json_fields::object_of(5);
    put(o, "code", e.code);
    put(o, "pci_bus_id", e.pci_bus_id);
    put(o, "gpu_index", e.gpu_index);
    put(o, "severity", e.severity);
    put(o, "message", e.message);
    return o;
}

template <typename T, typename F>
Json array_of(const std::vector<T>& items, F to_json_one) {
    Json a = Json::array();
    a.get_ref<Json::array_t&>().reserve(items.size());
    for (const auto& item : items) a.push_back(to_json_one(item));
    return a;
}

double read_time(const Reader& r) {
    if (auto unix_time = r.number("unix_time")) return *unix_time;
    const Json* time_field = r.find("time");
    if (time_field && time_field->is_number()) return time_field->get<double>();
    if (time_field && time_field->is_string()) {
        if (auto parsed = parse_rfc3339(time_field->get<std::string>())) return *parsed;
        r.problems.push_back("time: not RFC 3339");
    }
    return 0;
}

JobContext read_context(const Reader& cr) {
    JobContext c;
    c.scheduler = cr.string("scheduler");
    if (c.scheduler.empty()) c.scheduler = "none";
    c.job_id = cr.string("job_id");
    c.step_id = cr.string("step_id");
    c.job_name = cr.string("job_name");
    c.user = cr.string("user");
    c.nodelist = cr.string("nodelist");
    c.node_id = cr.string("node_id");
    c.gpus = cr.strings("gpus");
    c.visible_devices = cr.strings("visible_devices");
    c.pod = cr.string("pod");
    c.namespace_name = cr.string("namespace");
    return c;
}

HostStats read_host_stats(const Reader& hr) {
    HostStats hs;
    hs.load1 = hr.number("load1");
    hs.load5 = hr.number("load5");
    hs.load15 = hr.number("load15");
    hs.mem_total_bytes = hr.u64("mem_total_bytes");
    hs.mem_available_bytes = hr.u64("mem_available_bytes");
    hs.procs_running = hr.u64("procs_running");
    hs.procs_blocked = hr.u64("procs_blocked");
    hs.oom_kills = hr.u64("oom_kills");
    if (const Json* p = hr.find("psi"); p && p->is_object())
        hs.psi = read_psi(Reader{*p, hr.problems, "host_stats.psi"});
    return hs;
}

// The object under `key`, or null when absent or not an object (snapshot_from_json's leniency).
const Json* object_at(const Reader& r, const char* key) {
    const Json* v = r.find(key);
    return v && v->is_object() ? v : nullptr;
}

}  // namespace

Json host_stats_to_json(const HostStats& h) {
    Json o = json_fields::object_of(9);
    put(o, "load1", or_null(h.load1));
    put(o, "load5", or_null(h.load5));
    put(o, "load15", or_null(h.load15));
    put(o, "mem_total_bytes", or_null(h.mem_total_bytes));
    put(o, "mem_available_bytes", or_null(h.mem_available_bytes));
    put(o, "procs_running", or_null(h.procs_running));
    put(o, "procs_blocked", or_null(h.procs_blocked));
    put(o, "oom_kills", or_null(h.oom_kills));
    put(o, "psi", psi_to_json(h.psi));
    return o;
}

Json context_to_json(const JobContext& c) {
    return context_json(c);
}
Json interface_to_json(const NetInterface& i) {
    return interface_json(i);
}
Json rdma_port_to_json(const RdmaPort& p) {
    return rdma_json(p);
}
Json gpu_to_json(const Gpu& g) {
    return gpu_json(g);
}
Json xid_events_to_json(const std::vector<XidEvent>& events) {
    return array_of(events, xid_event_json);
}

Json collector_failures_to_json(const std::map<std::string, std::string>& failures) {
    Json o = json_fields::object_of(failures.size());
    for (const auto& [k, v] : failures) put(o, k, v);
    return o;
}

Json to_json(const Snapshot& s) {
    // The key order here is the timeline's: SnapshotDiffEncoder walks the same parts in the same order.
    Json o = json_fields::object_of(16);
    put(o, "schema", kSnapshotSchema);
    put(o, "time", format_rfc3339(s.time));
    put(o, "unix_time", s.time);
    put(o, "host", s.host);
    put(o, "context", context_json(s.context));
    put(o, "host_stats", host_stats_to_json(s.host_stats));
    put(o, "interfaces", array_of(s.interfaces, interface_json));
    put(o, "rdma", array_of(s.rdma, rdma_json));
    put(o, "gpus", array_of(s.gpus, gpu_json));
    put(o, "xid_events", xid_events_to_json(s.xid_events));
    if (!s.nccl.empty()) put(o, "nccl", nccl_to_json(s.nccl));
    if (s.job_cgroup) put(o, "job_cgroup", job_cgroup_to_json(*s.job_cgroup));
    put(o, "collector_failures", collector_failures_to_json(s.collector_failures));
    put(o, "warnings", s.warnings);
    return o;
}

SnapshotField snapshot_field(std::string_view key) {
    static constexpr std::pair<std::string_view, SnapshotField> kKeys[] = {
        {"time", SnapshotField::time},
        {"unix_time", SnapshotField::time},
        {"host", SnapshotField::host},
        {"context", SnapshotField::context},
        {"host_stats", SnapshotField::host_stats},
        {"interfaces", SnapshotField::interfaces},
        {"rdma", SnapshotField::rdma},
        {"gpus", SnapshotField::gpus},
        {"xid_events", SnapshotField::xid_events},
        {"nccl", SnapshotField::nccl},
        {"job_cgroup", SnapshotField::job_cgroup},
        {"collector_failures", SnapshotField::collector_failures},
        {"warnings", SnapshotField::warnings},
        {"schema", SnapshotField::none},
    };
    for (const auto& [name, field] : kKeys)
        if (name == key) return field;
    return SnapshotField::none;  // a newer writer's key: snapshot_from_json ignores it too
}

void read_snapshot_field(const Json& object, SnapshotField field, Snapshot& s,
                         std::vector<std::string>& problems) {
    const Reader r{object, problems, ""};
    switch (field) {
        case SnapshotField::none:
            return;
        case SnapshotField::time:
            s.time = read_time(r);
            return;
        case SnapshotField::host:
            s.host = r.string("host");
            return;
        case SnapshotField::context:
            if (const Json* c = object_at(r, "context"))
                s.context = read_context(Reader{*c, problems, "context"});
            else
                s.context = JobContext{};
            return;
        case SnapshotField::host_stats:
            if (const Json* h = object_at(r, "host_stats"))
                s.host_stats = read_host_stats(Reader{*h, problems, "host_stats"});
            else
                s.host_stats = HostStats{};
            return;
        case SnapshotField::interfaces:
            s.interfaces =
                r.objects<NetInterface>("interfaces", [](const Reader& e) { return read_interface(e); });
            return;
        case SnapshotField::rdma:
            s.rdma = r.objects<RdmaPort>("rdma", [](const Reader& e) { return read_rdma(e); });
            return;
        case SnapshotField::gpus:
            s.gpus = r.objects<Gpu>("gpus", [](const Reader& e) { return read_gpu(e); });
            return;
        case SnapshotField::xid_events:
            s.xid_events = r.objects<XidEvent>("xid_events", read_xid);
            return;
        case SnapshotField::nccl:
            if (const Json* n = object_at(r, "nccl"))
                s.nccl = nccl_from_json(*n, problems);
            else
                s.nccl = NcclState{};
            return;
        case SnapshotField::job_cgroup:
            if (const Json* c = object_at(r, "job_cgroup"))
                s.job_cgroup = read_job_cgroup(Reader{*c, problems, "job_cgroup"});
            else
                s.job_cgroup.reset();
            return;
        case SnapshotField::collector_failures:
            s.collector_failures.clear();
            if (const Json* f = object_at(r, "collector_failures"))
                for (auto it = f->begin(); it != f->end(); ++it)
                    s.collector_failures[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
            return;
        case SnapshotField::warnings:
            s.warnings = r.strings("warnings");
            return;
    }
}

bool read_snapshot_element(const Json& object, SnapshotField field, std::size_t index, Snapshot& s,
                           std::vector<std::string>& problems) {
    const Reader r{object, problems, ""};
    const char* key = field == SnapshotField::interfaces ? "interfaces"
                      : field == SnapshotField::rdma     ? "rdma"
                      : field == SnapshotField::gpus     ? "gpus"
                                                         : nullptr;
    const Json* array = key ? r.find(key) : nullptr;
    if (!array || !array->is_array() || index >= array->size() || !(*array)[index].is_object()) return false;
    const std::size_t size = field == SnapshotField::interfaces ? s.interfaces.size()
                             : field == SnapshotField::rdma     ? s.rdma.size()
                                                                : s.gpus.size();
    if (size != array->size()) return false;  // a skipped element: indices do not line up
    const Reader inner{(*array)[index], problems, std::string(key) + "[" + std::to_string(index) + "]"};
    if (field == SnapshotField::interfaces)
        read_interface(inner, s.interfaces[index]);
    else if (field == SnapshotField::rdma)
        read_rdma(inner, s.rdma[index]);
    else
        read_gpu(inner, s.gpus[index]);
    return true;
}

Snapshot snapshot_from_json(const Json& object, std::vector<std::string>& problems) {
    Snapshot s;
    for (int f = 0; f < static_cast<int>(SnapshotField::count); ++f)
        read_snapshot_field(object, static_cast<SnapshotField>(f), s, problems);
    return s;
}

}  // namespace stallscope
