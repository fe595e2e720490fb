// GPU-depth and job families of the Prometheus textfile sink (issue 39): NVML GPM activity, NVLink/PCIe
// throughput and errors, MIG identity, GPU processes counted per GPU, the job's cgroup and the job id.
// Bounded by construction: per GPU a fixed list (textfile_bound::kPerGpuDepth), per file one job cgroup
// (kJob); a process, a job id or a cgroup path is never a label of a series that repeats (the job id is
// the value of one info series, joined in PromQL with `* on (host) group_left (job_id) stallscope_job_info`).
#include "libstallscope/sinks/prometheus_families.h"

namespace stallscope::textfile {

namespace {

struct GpuValue {
    const char* name;
    const char* help;
    std::optional<double> (*get)(const Gpu&);
};

std::optional<double> times(Gauge g, double factor) {
    return g ? std::optional<double>(*g * factor) : std::nullopt;
}
std::optional<double> times(Counter c, double factor) {
    return c ? std::optional<double>(static_cast<double>(*c) * factor) : std::nullopt;
}

// GPM (Hopper+), percentages as 0..1 ratios and MiB/s as bytes/s like the rest of the file.
const GpuValue kGpm[] = {
    {"stallscope_gpu_sm_active_ratio", "NVML GPM SM activity (~ DCGM PROF_SM_ACTIVE), 0..1.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->sm_active_pct, 0.01) : std::nullopt; }},
    {"stallscope_gpu_sm_occupancy_ratio", "NVML GPM SM occupancy, 0..1.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->sm_occupancy_pct, 0.01) : std::nullopt; }},
    {"stallscope_gpu_tensor_active_ratio", "NVML GPM tensor pipe activity (any precision), 0..1.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->tensor_active_pct, 0.01) : std::nullopt; }},
    {"stallscope_gpu_dram_bandwidth_ratio", "NVML GPM DRAM bandwidth used, 0..1 of the peak.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->dram_bandwidth_pct, 0.01) : std::nullopt; }},
    {"stallscope_gpu_pcie_transmit_bytes_per_second", "NVML GPM PCIe transmit throughput, bytes/s.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->pcie_tx_mib_per_s, 1048576.0) : std::nullopt; }},
    {"stallscope_gpu_pcie_receive_bytes_per_second", "NVML GPM PCIe receive throughput, bytes/s.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->pcie_rx_mib_per_s, 1048576.0) : std::nullopt; }},
    {"stallscope_gpu_nvlink_transmit_bytes_per_second",
     "NVML GPM NVLink transmit throughput (all links), bytes/s.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->nvlink_tx_mib_per_s, 1048576.0) : std::nullopt; }},
    {"stallscope_gpu_nvlink_receive_bytes_per_second",
     "NVML GPM NVLink receive throughput (all links), bytes/s.",
     [](const Gpu& g) { return g.gpm ? times(g.gpm->nvlink_rx_mib_per_s, 1048576.0) : std::nullopt; }},
};

const GpuValue kInterconnectGauges[] = {
    {"stallscope_gpu_nvlink_links", "NVLink links NVML reports for this GPU.",
     [](const Gpu& g) {
         return g.interconnect ? times(g.interconnect->nvlink_link_count, 1.0) : std::nullopt;
     }},
};

const GpuValue kInterconnectCounters[] = {
    {"stallscope_gpu_nvlink_transmit_bytes_total", "NVLink data transmitted, all links, bytes.",
     [](const Gpu& g) {
         return g.interconnect ? times(g.interconnect->nvlink_tx_bytes, 1.0) : std::nullopt;
     }},
    {"stallscope_gpu_nvlink_receive_bytes_total", "NVLink data received, all links, bytes.",
     [](const Gpu& g) {
         return g.interconnect ? times(g.interconnect->nvlink_rx_bytes, 1.0) : std::nullopt;
     }},
    {"stallscope_gpu_pcie_replays_total", "PCIe replays (link-level retransmissions) of this GPU.",
     [](const Gpu& g) {
         return g.interconnect ? times(g.interconnect->pcie_replay_count, 1.0) : std::nullopt;
     }},
    {"stallscope_gpu_pcie_transmit_bytes_total", "PCIe bytes transmitted by this GPU.",
     [](const Gpu& g) { return g.interconnect ? times(g.interconnect->pcie_tx_bytes, 1.0) : std::nullopt; }},
    {"stallscope_gpu_pcie_receive_bytes_total", "PCIe bytes received by this GPU.",
     [](const Gpu& g) { return g.interconnect ? times(g.interconnect->pcie_rx_bytes, 1.0) : std::nullopt; }},
};

bool foreign(const GpuProcess& p) {
    return p.owner == "other_job" || p.owner == "other_user";
}

void gpu_sample(ExpositionWriter& w, const Gpu& g, const char* name, double value) {
    char buf[16];
    w.sample(name, {{"gpu", int_label(buf, g.index)}, {"uuid", g.uuid}}, value);
}

void write_table(ExpositionWriter& w, const Entities& e, std::span<const GpuValue> table, MetricType type) {
    for (const GpuValue& m : table) {
        w.family(m.name, type, m.help);
        for (const Gpu& g : e.gpus)
            if (auto v = m.get(g)) gpu_sample(w, g, m.name, *v);
    }
}

// One gauge or counter of the job cgroup; a missing value leaves the sample out.
template <class Value>
void job_value(ExpositionWriter& w, const char* name, MetricType type, const char* help, const Value& v,
               double factor) {
    if (!v) return;
    w.family(name, type, help);
    w.sample(name, {}, static_cast<double>(*v) * factor);
}

}  // namespace

void write_gpu_depth_families(ExpositionWriter& w, const Entities& e) {
    write_table(w, e, kGpm, MetricType::gauge);
    write_table(w, e, kInterconnectGauges, MetricType::gauge);
    write_table(w, e, kInterconnectCounters, MetricType::counter);
    w.family("stallscope_gpu_nvlink_errors_total", MetricType::counter,
             "NVLink errors, all links, by kind (crc, replay, recovery).");
    for (const Gpu& g : e.gpus) {
        if (!g.interconnect) continue;
        char buf[16];
        const std::pair<const char*, const Counter*> kinds[] = {
            {"crc", &g.interconnect->nvlink_crc_errors},
            {"replay", &g.interconnect->nvlink_replay_errors},
            {"recovery", &g.interconnect->nvlink_recovery_errors}};
        for (const auto& [kind, value] : kinds)
            if (*value)
                w.sample("stallscope_gpu_nvlink_errors_total",
                         {{"gpu", int_label(buf, g.index)}, {"uuid", g.uuid}, {"kind", kind}},
                         static_cast<double>(**value));
    }

    w.family("stallscope_gpu_mig_info", MetricType::gauge,
             "A MIG instance listed as its own GPU entry: its parent GPU and instance ids (always 1).");
    for (const Gpu& g : e.gpus) {
        if (!g.mig) continue;
        char gpu[16], parent[16], gi[16], ci[16];
        w.sample("stallscope_gpu_mig_info",
                 {{"gpu", int_label(gpu, g.index)},
                  {"uuid", g.uuid},
                  {"parent_gpu", int_label(parent, g.mig->parent_index)},
                  {"parent_uuid", g.mig->parent_uuid},
                  {"gpu_instance", g.mig->gpu_instance_id ? int_label(gi, *g.mig->gpu_instance_id) : ""},
                  {"compute_instance",
                   g.mig->compute_instance_id ? int_label(ci, *g.mig->compute_instance_id) : ""}},
                 1.0);
    }

    // Processes per GPU, never per process (a pid label would be a new series per process).
    w.family("stallscope_gpu_processes", MetricType::gauge, "Compute processes NVML lists on this GPU.");
    for (const Gpu& g : e.gpus)
        if (g.processes)
            gpu_sample(w, g, "stallscope_gpu_processes", static_cast<double>(g.processes->size()));
    w.family("stallscope_gpu_foreign_processes", MetricType::gauge,
             "Processes on this GPU that belong to another job or another user (not this job's).");
    for (const Gpu& g : e.gpus) {
        if (!g.processes) continue;
        std::size_t n = 0;
        for (const auto& p : *g.processes) n += foreign(p);
        gpu_sample(w, g, "stallscope_gpu_foreign_processes", static_cast<double>(n));
    }
    w.family("stallscope_gpu_foreign_process_memory_bytes", MetricType::gauge,
             "GPU memory used by processes of another job or user, bytes (those NVML gives a figure for).");
    for (const Gpu& g : e.gpus) {
        if (!g.processes) continue;
        double bytes = 0;
        for (const auto& p : *g.processes)
            if (foreign(p) && p.used_memory_bytes) bytes += static_cast<double>(*p.used_memory_bytes);
        gpu_sample(w, g, "stallscope_gpu_foreign_process_memory_bytes", bytes);
    }
}

void write_job_families(ExpositionWriter& w, const Snapshot& s) {
    const std::optional<JobCgroup>& c = s.job_cgroup;
    const std::string& job_id = !s.context.job_id.empty() ? s.context.job_id
                                : c                       ? c->job_id
                                                          : s.context.job_id;
    const std::string& step_id = !s.context.step_id.empty() ? s.context.step_id
                                 : c                        ? c->step_id
                                                            : s.context.step_id;
    if (!job_id.empty()) {
        w.family("stallscope_job_info", MetricType::gauge,
                 "The job this file describes (always 1): the only series with a job_id label, so a new "
                 "job adds one series, not one per metric.");
        w.sample("stallscope_job_info",
                 {{"job_id", job_id}, {"step_id", step_id}, {"scope", c ? std::string_view(c->scope) : ""}},
                 1.0);
    }
    if (!c) return;
    job_value(w, "stallscope_job_memory_bytes", MetricType::gauge, "Job cgroup memory.current, bytes.",
              c->memory_current_bytes, 1.0);
    job_value(w, "stallscope_job_memory_peak_bytes", MetricType::gauge, "Job cgroup memory.peak, bytes.",
              c->memory_peak_bytes, 1.0);
    job_value(w, "stallscope_job_memory_limit_bytes", MetricType::gauge,
              "Job cgroup memory.max, bytes (absent when unlimited).", c->memory_max_bytes, 1.0);
    job_value(w, "stallscope_job_oom_events_total", MetricType::counter,
              "Job cgroup memory.events oom: the limit was hit.", c->memory_oom_events, 1.0);
    job_value(w, "stallscope_job_oom_kills_total", MetricType::counter,
              "Job cgroup memory.events oom_kill: processes of the job killed by the OOM killer.",
              c->memory_oom_kill_events, 1.0);
    job_value(w, "stallscope_job_cpu_seconds_total", MetricType::counter, "Job cgroup CPU time, seconds.",
              c->cpu_usage_usec, 1e-6);
    job_value(w, "stallscope_job_cpu_periods_total", MetricType::counter,
              "Job cgroup CPU bandwidth periods elapsed.", c->cpu_nr_periods, 1.0);
    job_value(w, "stallscope_job_cpu_throttled_periods_total", MetricType::counter,
              "Job cgroup CPU bandwidth periods in which the job was throttled.", c->cpu_nr_throttled, 1.0);
    job_value(w, "stallscope_job_cpu_throttled_seconds_total", MetricType::counter,
              "Job cgroup time throttled by its CPU limit, seconds.", c->cpu_throttled_usec, 1e-6);

    const Psi& p = c->psi;
    struct Pressure {
        const char *resource, *kind, *window;
        const Gauge* value;
    };
    const Pressure averages[] = {
        {"cpu", "some", "10s", &p.cpu_some_avg10},       {"cpu", "some", "60s", &p.cpu_some_avg60},
        {"io", "some", "10s", &p.io_some_avg10},         {"io", "some", "60s", &p.io_some_avg60},
        {"io", "full", "10s", &p.io_full_avg10},         {"io", "full", "60s", &p.io_full_avg60},
        {"memory", "some", "10s", &p.memory_some_avg10}, {"memory", "some", "60s", &p.memory_some_avg60},
        {"memory", "full", "10s", &p.memory_full_avg10}, {"memory", "full", "60s", &p.memory_full_avg60},
    };
    w.family(
        "stallscope_job_pressure_ratio", MetricType::gauge,
        "Job cgroup pressure stall information: share of time stalled, 0..1, by resource, kind and window.");
    for (const auto& a : averages)
        if (*a.value)
            w.sample("stallscope_job_pressure_ratio",
                     {{"resource", a.resource}, {"kind", a.kind}, {"window", a.window}}, **a.value * 0.01);
    struct Stalled {
        const char *resource, *kind;
        const Counter* value;
    };
    const Stalled totals[] = {{"cpu", "some", &p.cpu_some_total_us},
                              {"io", "some", &p.io_some_total_us},
                              {"io", "full", &p.io_full_total_us},
                              {"memory", "some", &p.memory_some_total_us},
                              {"memory", "full", &p.memory_full_total_us}};
    w.family("stallscope_job_pressure_stalled_seconds_total", MetricType::counter,
             "Job cgroup pressure stall time, seconds, by resource and kind (rate() of it is exact).");
    for (const auto& t : totals)
        if (*t.value)
            w.sample("stallscope_job_pressure_stalled_seconds_total",
                     {{"resource", t.resource}, {"kind", t.kind}}, static_cast<double>(**t.value) * 1e-6);
}

}  // namespace stallscope::textfile
