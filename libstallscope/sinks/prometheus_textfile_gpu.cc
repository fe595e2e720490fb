// GPU families of the Prometheus textfile sink. Labels: gpu (the source's index) and uuid.
#include <algorithm>
#include <optional>

#include "libstallscope/sinks/prometheus_families.h"

namespace stallscope::textfile {

namespace {

struct GpuGauge {
    const char* name;
    const char* help;
    std::optional<double> (*get)(const Gpu&);
};

std::optional<double> scaled(Counter c, double factor) {
    if (!c) return std::nullopt;
    return static_cast<double>(*c) * factor;
}
std::optional<double> scaled(Gauge g, double factor) {
    if (!g) return std::nullopt;
    return *g * factor;
}

// Gauges and counters that are one number per GPU; a missing value leaves the sample out.
const GpuGauge kGauges[] = {
    {"stallscope_gpu_utilization_ratio",
     "GPU utilization (NVML utilization.gpu / amdgpu gpu_busy_percent), 0..1.",
     [](const Gpu& g) { return scaled(g.utilization_pct, 0.01); }},
    {"stallscope_gpu_memory_used_bytes", "GPU memory in use, bytes.",
     [](const Gpu& g) { return scaled(g.memory_used_bytes, 1.0); }},
    {"stallscope_gpu_memory_total_bytes", "GPU memory size, bytes.",
     [](const Gpu& g) { return scaled(g.memory_total_bytes, 1.0); }},
    {"stallscope_gpu_temperature_celsius", "GPU core temperature, degrees Celsius.",
     [](const Gpu& g) { return scaled(g.temperature_c, 1.0); }},
    {"stallscope_gpu_power_watts", "GPU power draw, watts.",
     [](const Gpu& g) { return scaled(g.power_w, 1.0); }},
    {"stallscope_gpu_power_limit_watts", "GPU enforced power limit, watts.",
     [](const Gpu& g) { return scaled(g.power_limit_w, 1.0); }},
    {"stallscope_gpu_sm_clock_hertz", "Current SM clock, hertz.",
     [](const Gpu& g) { return scaled(g.sm_clock_mhz, 1e6); }},
    {"stallscope_gpu_sm_clock_max_hertz", "Maximum SM clock, hertz.",
     [](const Gpu& g) { return scaled(g.max_sm_clock_mhz, 1e6); }},
    {"stallscope_gpu_remapped_rows_pending", "1 when a row remap is pending (needs a GPU reset).",
     [](const Gpu& g) { return scaled(g.remapped_rows_pending, 1.0); }},
    {"stallscope_gpu_remapped_rows_failure", "1 when a row remap failed (GPU should be replaced).",
     [](const Gpu& g) { return scaled(g.remapped_rows_failure, 1.0); }},
};

const GpuGauge kCounters[] = {
    {"stallscope_gpu_ecc_uncorrected_errors_total", "Volatile uncorrected ECC errors since driver load.",
     [](const Gpu& g) { return scaled(g.ecc_uncorrected, 1.0); }},
    {"stallscope_gpu_ecc_corrected_errors_total", "Volatile corrected ECC errors since driver load.",
     [](const Gpu& g) { return scaled(g.ecc_corrected, 1.0); }},
    {"stallscope_gpu_energy_joules_total", "Energy used since driver load, joules.",
     [](const Gpu& g) { return scaled(g.energy_mj, 1e-3); }},
    {"stallscope_gpu_power_violation_seconds_total",
     "Time clocks were held down by the power limit, seconds.",
     [](const Gpu& g) { return scaled(g.violation_power_ns, 1e-9); }},
    {"stallscope_gpu_thermal_violation_seconds_total", "Time clocks were held down by temperature, seconds.",
     [](const Gpu& g) { return scaled(g.violation_thermal_ns, 1e-9); }},
};

// NVML clocks-event reasons in bit order (nvml.h nvmlClocksEventReason*; same names as
// sources/nvml/clocks_event_reasons.h). A fixed list keeps the series count bounded.
const char* const kThrottleReasons[] = {
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clock_setting",
};

void write_gpu_series(ExpositionWriter& w, const Gpu& g, const char* name, double value) {
    char buf[16];
    w.sample(name, {{"gpu", int_label(buf, g.index)}, {"uuid", g.uuid}}, value);
}

}  // namespace

void write_gpu_families(ExpositionWriter& w, const Entities& e,
                        const std::map<std::string, GpuXidTotal>& xid_totals) {
    char buf[16];
    w.family("stallscope_gpu_info", MetricType::gauge, "GPU identity (always 1).");
    for (const Gpu& g : e.gpus) {
        w.sample("stallscope_gpu_info",
                 {{"gpu", int_label(buf, g.index)},
                  {"uuid", g.uuid},
                  {"pci_bus_id", g.pci_bus_id},
                  {"name", g.name},
                  {"vendor", g.vendor}},
                 1.0);
    }
    auto write_table = [&](const auto& table, MetricType type) {
        for (const GpuGauge& m : table) {
            w.family(m.name, type, m.help);
            for (const Gpu& g : e.gpus) {
                if (auto v = m.get(g)) write_gpu_series(w, g, m.name, *v);
            }
        }
    };
    write_table(kGauges, MetricType::gauge);
    write_table(kCounters, MetricType::counter);

    // Throttle reasons: known when the source gave the NVML mask or decoded names; otherwise left out.
    auto known = [](const Gpu& g) {
        return g.throttle_reasons_mask.has_value() || !g.throttle_reasons.empty();
    };
    w.family("stallscope_gpu_throttle_reason", MetricType::gauge,
             "1 while the GPU clocks are held down for this reason (NVML clocks-event reasons).");
    for (const Gpu& g : e.gpus) {
        if (!known(g)) continue;
        for (std::size_t bit = 0; bit < std::size(kThrottleReasons); ++bit) {
            const char* reason = kThrottleReasons[bit];
            bool active = (g.throttle_reasons_mask && (*g.throttle_reasons_mask >> bit) & 1U) ||
                          std::find(g.throttle_reasons.begin(), g.throttle_reasons.end(), reason) !=
                              g.throttle_reasons.end();
            w.sample("stallscope_gpu_throttle_reason",
                     {{"gpu", int_label(buf, g.index)}, {"uuid", g.uuid}, {"reason", reason}},
                     active ? 1.0 : 0.0);
        }
    }

    w.family("stallscope_gpu_xid_errors_total", MetricType::counter,
             "Xid errors reported by the kernel for this GPU since stallscope started.");
    for (const Gpu& g : e.gpus) {
        auto it = xid_totals.find(gpu_key(g));
        write_gpu_series(w, g, "stallscope_gpu_xid_errors_total",
                         static_cast<double>(it == xid_totals.end() ? 0 : it->second.count));
    }
    w.family("stallscope_gpu_xid_last_code", MetricType::gauge,
             "Code of the last Xid error seen for this GPU since stallscope started, 0 when none.");
    for (const Gpu& g : e.gpus) {
        auto it = xid_totals.find(gpu_key(g));
        write_gpu_series(w, g, "stallscope_gpu_xid_last_code",
                         static_cast<double>(it == xid_totals.end() ? 0 : it->second.last_code));
    }
}

}  // namespace stallscope::textfile
