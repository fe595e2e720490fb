#include "libstallscope/model/snapshot_json_depth.h"

namespace stallscope {
namespace {

using json_fields::or_null;
using json_fields::put;
using json_fields::Reader;

std::optional<int> read_int(const Reader& r, const char* key) {
    if (auto v = r.integer(key)) return static_cast<int>(*v);
    return std::nullopt;
}

// An optional sub-object: nullopt when absent or not an object (the latter is a problem).
template <typename T, typename F>
std::optional<T> sub_object(const Reader& r, const char* key, F read_one) {
    const Json* v = r.find(key);
    if (!v || v->is_null()) return std::nullopt;
    if (!v->is_object()) {
        r.wrong_type(key, "an object");
        return std::nullopt;
    }
    return read_one(Reader{*v, r.problems, r.where.empty() ? key : r.where + "." + key});
}

GpmMetrics read_gpm(const Reader& r) {
    GpmMetrics g;
    g.sm_active_pct = r.number("sm_active_pct");
    g.sm_occupancy_pct = r.number("sm_occupancy_pct");
    g.tensor_active_pct = r.number("tensor_active_pct");
    g.dram_bandwidth_pct = r.number("dram_bandwidth_pct");
    g.pcie_tx_mib_per_s = r.number("pcie_tx_mib_per_s");
    g.pcie_rx_mib_per_s = r.number("pcie_rx_mib_per_s");
    g.nvlink_tx_mib_per_s = r.number("nvlink_tx_mib_per_s");
    g.nvlink_rx_mib_per_s = r.number("nvlink_rx_mib_per_s");
    return g;
}

GpuInterconnect read_interconnect(const Reader& r) {
    GpuInterconnect l;
    l.nvlink_link_count = r.u64("nvlink_link_count");
    l.nvlink_tx_bytes = r.u64("nvlink_tx_bytes");
    l.nvlink_rx_bytes = r.u64("nvlink_rx_bytes");
    l.nvlink_crc_errors = r.u64("nvlink_crc_errors");
    l.nvlink_replay_errors = r.u64("nvlink_replay_errors");
    l.nvlink_recovery_errors = r.u64("nvlink_recovery_errors");
    l.pcie_replay_count = r.u64("pcie_replay_count");
    l.pcie_tx_bytes = r.u64("pcie_tx_bytes");
    l.pcie_rx_bytes = r.u64("pcie_rx_bytes");
    return l;
}

MigInstance read_mig(const Reader& r) {
    MigInstance m;
    m.parent_uuid = r.string("parent_uuid");
    m.parent_pci_bus_id = r.string("parent_pci_bus_id");
    m.parent_index = read_int(r, "parent_index").value_or(-1);
    m.gpu_instance_id = read_int(r, "gpu_instance_id");
    m.compute_instance_id = read_int(r, "compute_instance_id");
    if (const Json* v = r.find("gauges_from_parent"); v && v->is_boolean())
        m.gauges_from_parent = v->get<bool>();
    return m;
}

GpuProcess read_process(const Reader& r) {
    GpuProcess p;
    p.pid = r.integer("pid").value_or(0);
    p.used_memory_bytes = r.u64("used_memory_bytes");
    p.gpu_instance_id = read_int(r, "gpu_instance_id");
    p.compute_instance_id = read_int(r, "compute_instance_id");
    p.cgroup = r.string("cgroup");
    p.job_id = r.string("job_id");
    if (auto uid = r.u64("uid"); uid && *uid <= 0xffffffffULL) p.uid = static_cast<std::uint32_t>(*uid);
    p.owner = r.string("owner");
    return p;
}

}  // namespace

Json psi_to_json(const Psi& p) {
    Json o = json_fields::object_of(15);
    put(o, "cpu_some_avg10", or_null(p.cpu_some_avg10));
    put(o, "cpu_some_avg60", or_null(p.cpu_some_avg60));
    put(o, "io_some_avg10", or_null(p.io_some_avg10));
    put(o, "io_some_avg60", or_null(p.io_some_avg60));
    put(o, "io_full_avg10", or_null(p.io_full_avg10));
    put(o, "io_full_avg60", or_null(p.io_full_avg60));
    put(o, "memory_some_avg10", or_null(p.memory_some_avg10));
    put(o, "memory_some_avg60", or_null(p.memory_some_avg60));
    put(o, "memory_full_avg10", or_null(p.memory_full_avg10));
    put(o, "memory_full_avg60", or_null(p.memory_full_avg60));
    put(o, "cpu_some_total_us", or_null(p.cpu_some_total_us));
    put(o, "io_some_total_us", or_null(p.io_some_total_us));
    put(o, "io_full_total_us", or_null(p.io_full_total_us));
    put(o, "memory_some_total_us", or_null(p.memory_some_total_us));
    put(o, "memory_full_total_us", or_null(p.memory_full_total_us));
    return o;
}

Psi read_psi(const Reader& pr) {
    Psi psi;
    psi.cpu_some_avg10 = pr.number("cpu_some_avg10");
    psi.cpu_some_avg60 = pr.number("cpu_some_avg60");
    psi.io_some_avg10 = pr.number("io_some_avg10");
    psi.io_some_avg60 = pr.number("io_some_avg60");
    psi.io_full_avg10 = pr.number("io_full_avg10");
    psi.io_full_avg60 = pr.number("io_full_avg60");
    psi.memory_some_avg10 = pr.number("memory_some_avg10");
    psi.memory_some_avg60 = pr.number("memory_some_avg60");
    psi.memory_full_avg10 = pr.number("memory_full_avg10");
    psi.memory_full_avg60 = pr.number("memory_full_avg60");
    psi.cpu_some_total_us = pr.u64("cpu_some_total_us");
    psi.io_some_total_us = pr.u64("io_some_total_us");
    psi.io_full_total_us = pr.u64("io_full_total_us");
    psi.memory_some_total_us = pr.u64("memory_some_total_us");
    psi.memory_full_total_us = pr.u64("memory_full_total_us");
    return psi;
}

Json gpm_to_json(const GpmMetrics& g) {
    Json o = json_fields::object_of(8);
    put(o, "sm_active_pct", or_null(g.sm_active_pct));
    put(o, "sm_occupancy_pct", or_null(g.sm_occupancy_pct));
    put(o, "tensor_active_pct", or_null(g.tensor_active_pct));
    put(o, "dram_bandwidth_pct", or_null(g.dram_bandwidth_pct));
    put(o, "pcie_tx_mib_per_s", or_null(g.pcie_tx_mib_per_s));
    put(o, "pcie_rx_mib_per_s", or_null(g.pcie_rx_mib_per_s));
    put(o, "nvlink_tx_mib_per_s", or_null(g.nvlink_tx_mib_per_s));
    put(o, "nvlink_rx_mib_per_s", or_null(g.nvlink_rx_mib_per_s));
    return o;
}

Json interconnect_to_json(const GpuInterconnect& l) {
    Json o = json_fields::object_of(9);
    put(o, "nvlink_link_count", or_null(l.nvlink_link_count));
    put(o, "nvlink_tx_bytes", or_null(l.nvlink_tx_bytes));
    put(o, "nvlink_rx_bytes", or_null(l.nvlink_rx_bytes));
    put(o, "nvlink_crc_errors", or_null(l.nvlink_crc_errors));
    put(o, "nvlink_replay_errors", or_null(l.nvlink_replay_errors));
    put(o, "nvlink_recovery_errors", or_null(l.nvlink_recovery_errors));
    put(o, "pcie_replay_count", or_null(l.pcie_replay_count));
    put(o, "pcie_tx_bytes", or_null(l.pcie_tx_bytes));
    put(o, "pcie_rx_bytes", or_null(l.pcie_rx_bytes));
    return o;
}

Json mig_to_json(const MigInstance& m) {
    Json o = json_fields::object_of(6);
    put(o, "parent_uuid", m.parent_uuid);
    put(o, "parent_pci_bus_id", m.parent_pci_bus_id);
    put(o, "parent_index", m.parent_index);
    put(o, "gpu_instance_id", or_null(m.gpu_instance_id));
    put(o, "compute_instance_id", or_null(m.compute_instance_id));
    put(o, "gauges_from_parent", m.gauges_from_parent);
    return o;
}

Json processes_to_json(const std::vector<GpuProcess>& processes) {
    Json a = Json::array();
    for (const auto& p : processes)
        a.push_back(Json{{"pid", p.pid},
                         {"used_memory_bytes", or_null(p.used_memory_bytes)},
                         {"gpu_instance_id", or_null(p.gpu_instance_id)},
                         {"compute_instance_id", or_null(p.compute_instance_id)},
                         {"cgroup", p.cgroup},
                         {"job_id", p.job_id},
                         {"uid", p.uid ? Json(*p.uid) : Json(nullptr)},
                         {"owner", p.owner}});
    return a;
}

Json job_cgroup_to_json(const JobCgroup& c) {
    Json o = json_fields::object_of(17);
    put(o, "version", c.version);
    put(o, "path", c.path);
    put(o, "scope", c.scope);
    put(o, "job_id", c.job_id);
    put(o, "step_id", c.step_id);
    put(o, "memory_current_bytes", or_null(c.memory_current_bytes));
    put(o, "memory_peak_bytes", or_null(c.memory_peak_bytes));
    put(o, "memory_max_bytes", or_null(c.memory_max_bytes));
    put(o, "memory_oom_events", or_null(c.memory_oom_events));
    put(o, "memory_oom_kill_events", or_null(c.memory_oom_kill_events));
    put(o, "cpu_usage_usec", or_null(c.cpu_usage_usec));
    put(o, "cpu_user_usec", or_null(c.cpu_user_usec));
    put(o, "cpu_system_usec", or_null(c.cpu_system_usec));
    put(o, "cpu_nr_periods", or_null(c.cpu_nr_periods));
    put(o, "cpu_nr_throttled", or_null(c.cpu_nr_throttled));
    put(o, "cpu_throttled_usec", or_null(c.cpu_throttled_usec));
    put(o, "psi", psi_to_json(c.psi));
    return o;
}

void add_gpu_depth_json(const Gpu& g, Json& o) {
    if (g.gpm) put(o, "gpm", gpm_to_json(*g.gpm));
    if (g.interconnect) put(o, "interconnect", interconnect_to_json(*g.interconnect));
    if (g.mig) put(o, "mig", mig_to_json(*g.mig));
    if (g.processes) put(o, "processes", processes_to_json(*g.processes));
}

void read_gpu_depth(const Reader& r, Gpu& g) {
    g.gpm = sub_object<GpmMetrics>(r, "gpm", read_gpm);
    g.interconnect = sub_object<GpuInterconnect>(r, "interconnect", read_interconnect);
    g.mig = sub_object<MigInstance>(r, "mig", read_mig);
    g.processes.reset();  // reading into a GPU read before (the timeline reader's kept sample)
    if (const Json* v = r.find("processes"); v && v->is_array())
        g.processes = r.objects<GpuProcess>("processes", read_process);
    else if (v && !v->is_null())
        r.wrong_type("processes", "an array");
}

JobCgroup read_job_cgroup(const Reader& r) {
    JobCgroup c;
    c.version = read_int(r, "version").value_or(2);
    c.path = r.string("path");
    c.scope = r.string("scope");
    c.job_id = r.string("job_id");
    c.step_id = r.string("step_id");
    c.memory_current_bytes = r.u64("memory_current_bytes");
    c.memory_peak_bytes = r.u64("memory_peak_bytes");
    c.memory_max_bytes = r.u64("memory_max_bytes");
    c.memory_oom_events = r.u64("memory_oom_events");
    c.memory_oom_kill_events = r.u64("memory_oom_kill_events");
    c.cpu_usage_usec = r.u64("cpu_usage_usec");
    c.cpu_user_usec = r.u64("cpu_user_usec");
    c.cpu_system_usec = r.u64("cpu_system_usec");
    c.cpu_nr_periods = r.u64("cpu_nr_periods");
    c.cpu_nr_throttled = r.u64("cpu_nr_throttled");
    c.cpu_throttled_usec = r.u64("cpu_throttled_usec");
    if (auto psi = sub_object<Psi>(r, "psi", read_psi)) c.psi = *psi;
    return c;
}

}  // namespace stallscope
