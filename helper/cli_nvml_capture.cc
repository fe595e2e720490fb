// `stallscope nvml-capture`: what this node's NVML answers to every query stallscope makes, written as a
// fixture of the fake libnvidia-ml (tests/fake_nvml, keys documented in fake_nvml.cc). A capture from any
// site's GPU becomes a test fixture as it is, and the fake can be held against the real library field by
// field (contrib/validate-gpu-node.sh writes one into its output directory).
//
// Mapping of NVML's answers onto the fixture: SUCCESS -> the value under the fake's key; NOT_SUPPORTED
// -> the key left out (the fake answers NOT_SUPPORTED for an absent key), or the query named in
// "not_supported" where an absent key means something else (processes: none running); any other error
// -> "errors": {query: code}, which the fake returns as it is. Whatever did not map is in "_capture".
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "helper/cli_args.h"
#include "helper/subcommands.h"
#include "libstallscope/sources/nvml/nvml_library.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/roots.h"
#include "stallscope_config.h"

namespace stallscope::cli {
namespace {

using nlohmann::json;

// The field ids read_interconnect asks for (nvml_depth.cc), with the scope it uses.
constexpr struct {
    unsigned id, scope;
} kFieldIds[] = {{NVML_FI_DEV_NVLINK_LINK_COUNT, 0},
                 {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 0xFFFFFFFFu},
                 {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, 0xFFFFFFFFu},
                 {NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0},
                 {NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0},
                 {NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0},
                 {NVML_FI_DEV_PCIE_REPLAY_COUNTER, 0},
                 {NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0},
                 {NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0}};

// The GPM metrics the collector reads, plus graphics and integer activity for reference.
constexpr nvmlGpmMetricId_t kGpmIds[] = {NVML_GPM_METRIC_GRAPHICS_UTIL,
                                         NVML_GPM_METRIC_SM_UTIL,
                                         NVML_GPM_METRIC_SM_OCCUPANCY,
                                         NVML_GPM_METRIC_INTEGER_UTIL,
                                         NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                         NVML_GPM_METRIC_DRAM_BW_UTIL,
                                         NVML_GPM_METRIC_PCIE_TX_PER_SEC,
                                         NVML_GPM_METRIC_PCIE_RX_PER_SEC,
                                         NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
                                         NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC};

class Capture {
  public:
    Capture(const NvmlLibrary& lib, double gpm_seconds)
        : lib_(lib), fn_(lib.fn()), gpm_seconds_(gpm_seconds) {}

    json run() {
        json gpus = json::array();
        unsigned count = 0;
        if (nvmlReturn_t rc = fn_.get_count(&count); rc != NVML_SUCCESS)
            throw std::runtime_error("nvmlDeviceGetCount_v2: " + lib_.error_string(rc));
        std::vector<nvmlDevice_t> handles(count, nullptr);
        for (unsigned i = 0; i < count; ++i) {
            json gpu = json::object();
            if (nvmlReturn_t rc = fn_.get_handle_by_index(i, &handles[i]); rc != NVML_SUCCESS) {
                // The fake knows only this refusal (a GPU outside the caller's device cgroup).
                if (rc == NVML_ERROR_NO_PERMISSION)
                    gpu["no_permission"] = true;
                else
                    note("GPU " + std::to_string(i) +
                         ": nvmlDeviceGetHandleByIndex_v2: " + lib_.error_string(rc));
                handles[i] = nullptr;
                gpus.push_back(std::move(gpu));
                continue;
            }
            device(handles[i], gpu, false);
            gpus.push_back(std::move(gpu));
        }
        gpm(handles, gpus);
        json out = json::object();
        out["_comment"] = "Captured by stallscope nvml-capture from " + lib_.path() +
                          ": the answers of this node's NVML in the fake libnvidia-ml's fixture format "
                          "(tests/fake_nvml/fake_nvml.cc).";
        out["_capture"] = meta_;
        out["gpus"] = std::move(gpus);
        return out;
    }

  private:
    void note(std::string text) { meta_["notes"].push_back(std::move(text)); }

    // One query's outcome: true on SUCCESS; otherwise recorded as the fixture needs it.
    bool ok(nvmlReturn_t rc, json& object, const char* query, bool absent_means_unsupported = true) {
        if (rc == NVML_SUCCESS) return true;
        if (rc == NVML_ERROR_NOT_SUPPORTED) {
            if (!absent_means_unsupported) object["not_supported"].push_back(query);
        } else {
            object["errors"][query] = static_cast<int>(rc);
        }
        return false;
    }

    template <class Fn, class... Args>
    bool call(Fn fn, json& object, const char* query, Args... args) {
        if (!fn) {
            // The library lacks the entry point: what the collector sees as "not supported".
            object["_missing_symbols"].push_back(query);
            return false;
        }
        return ok(fn(args...), object, query);
    }

    void device(nvmlDevice_t h, json& g, bool mig) {
        char text[256] = {};
        if (call(fn_.get_name, g, "name", h, text, static_cast<unsigned>(sizeof text))) g["name"] = text;
        if (call(fn_.get_uuid, g, "uuid", h, text, static_cast<unsigned>(sizeof text))) g["uuid"] = text;
        if (!mig) identity(h, g);
        nvmlMemory_t memory{};
        if (call(fn_.get_memory, g, "memory", h, &memory)) {
            g["memory_total_bytes"] = memory.total;
            g["memory_used_bytes"] = memory.used;
        }
        processes(h, g);
        if (mig) {
            unsigned id = 0;
            if (call(fn_.get_gpu_instance_id, g, "gpu_instance_id", h, &id)) g["gpu_instance_id"] = id;
            if (call(fn_.get_compute_instance_id, g, "compute_instance_id", h, &id))
                g["compute_instance_id"] = id;
            return;
        }
        gauges(h, g);
        fields(h, g);
        mig_instances(h, g);
    }

    void identity(nvmlDevice_t h, json& g) {
        nvmlPciInfo_t pci{};
        if (call(fn_.get_pci_info, g, "pci_info", h, &pci)) {
            g["pci_bus_id"] = pci.busId;
            char hex[16];
            std::snprintf(hex, sizeof hex, "0x%08X", pci.pciDeviceId);
            g["pci_device_id"] = hex;
            std::snprintf(hex, sizeof hex, "0x%08X", pci.pciSubSystemId);
            g["pci_subsystem_id"] = hex;
        }
        unsigned minor = 0;
        if (call(fn_.get_minor_number, g, "minor_number", h, &minor)) g["minor_number"] = minor;
    }

    void gauges(nvmlDevice_t h, json& g) {
        nvmlUtilization_t util{};
        if (call(fn_.get_utilization, g, "utilization", h, &util)) {
            g["utilization_gpu_pct"] = util.gpu;
            g["utilization_memory_pct"] = util.memory;
        }
        unsigned v = 0;
        if (call(fn_.get_temperature, g, "temperature", h, NVML_TEMPERATURE_GPU, &v)) g["temperature_c"] = v;
        if (call(fn_.get_power_usage, g, "power_usage", h, &v)) g["power_usage_mw"] = v;
        if (call(fn_.get_enforced_power_limit, g, "enforced_power_limit", h, &v))
            g["enforced_power_limit_mw"] = v;
        if (call(fn_.get_clock, g, "clock_sm", h, NVML_CLOCK_SM, &v)) g["sm_clock_mhz"] = v;
        if (call(fn_.get_max_clock, g, "max_clock_sm", h, NVML_CLOCK_SM, &v)) g["max_sm_clock_mhz"] = v;
        unsigned long long u = 0;
        if (call(fn_.get_clocks_event_reasons, g, "clocks_event_reasons", h, &u))
            g["clocks_event_reasons"] = u;
        nvmlViolationTime_t violation{};
        if (call(fn_.get_violation_status, g, "violation_power", h, NVML_PERF_POLICY_POWER, &violation))
            g["violation_power_ns"] = violation.violationTime;
        if (call(fn_.get_violation_status, g, "violation_thermal", h, NVML_PERF_POLICY_THERMAL, &violation))
            g["violation_thermal_ns"] = violation.violationTime;
        if (call(fn_.get_total_ecc_errors, g, "ecc_uncorrected", h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                 NVML_VOLATILE_ECC, &u))
            g["ecc_volatile_uncorrected"] = u;
        if (call(fn_.get_total_ecc_errors, g, "ecc_corrected", h, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                 NVML_VOLATILE_ECC, &u))
            g["ecc_volatile_corrected"] = u;
        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        if (call(fn_.get_remapped_rows, g, "remapped_rows", h, &corr, &unc, &pending, &failure))
            g["remapped_rows"] = {{"correctable", corr},
                                  {"uncorrectable", unc},
                                  {"pending", pending != 0},
                                  {"failure", failure != 0}};
        if (call(fn_.get_total_energy, g, "energy", h, &u)) g["energy_mj"] = u;
        // The PCIe link: the fake answers the four from these keys under one query name, as the collector
        // gives up on them together.
        if (call(fn_.get_pcie_link_generation, g, "pcie_link", h, &v)) g["pcie_link_generation"] = v;
        if (call(fn_.get_pcie_link_width, g, "pcie_link", h, &v)) g["pcie_link_width"] = v;
        if (call(fn_.get_max_pcie_link_generation, g, "pcie_link", h, &v)) g["pcie_link_max_generation"] = v;
        if (call(fn_.get_max_pcie_link_width, g, "pcie_link", h, &v)) g["pcie_link_max_width"] = v;
    }

    void fields(nvmlDevice_t h, json& g) {
        constexpr int kCount = static_cast<int>(std::size(kFieldIds));
        nvmlFieldValue_t values[kCount] = {};
        for (int i = 0; i < kCount; ++i) {
            values[i].fieldId = kFieldIds[i].id;
            values[i].scopeId = kFieldIds[i].scope;
        }
        if (!call(fn_.get_field_values, g, "field_values", h, kCount, values)) return;
        json out = json::object();
        for (const auto& v : values) {
            if (v.nvmlReturn != NVML_SUCCESS) continue;  // absent: the fake answers NOT_SUPPORTED
            const std::string id = std::to_string(v.fieldId);
            switch (v.valueType) {
                case NVML_VALUE_TYPE_DOUBLE:
                    if (std::isfinite(v.value.dVal) && v.value.dVal >= 0 && v.value.dVal < 9.0e18)
                        out[id] = static_cast<unsigned long long>(std::llround(v.value.dVal));
                    break;
                case NVML_VALUE_TYPE_UNSIGNED_INT:
                    out[id] = v.value.uiVal;
                    break;
                case NVML_VALUE_TYPE_UNSIGNED_LONG:
                    out[id] = v.value.ulVal;
                    break;
                case NVML_VALUE_TYPE_UNSIGNED_SHORT:
                    out[id] = v.value.usVal;
                    break;
                case NVML_VALUE_TYPE_SIGNED_INT:
                    out[id] = v.value.siVal;
                    break;
                case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
                    out[id] = v.value.sllVal;
                    break;
                default:
                    out[id] = v.value.ullVal;
            }
            if (v.valueType != NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)
                meta_["field_value_types"][id] = static_cast<int>(v.valueType);
        }
        g["fields"] = std::move(out);
    }

    void processes(nvmlDevice_t h, json& g) {
        if (!fn_.get_compute_processes) {
            g["_missing_symbols"].push_back("processes");
            return;
        }
        std::vector<nvmlProcessInfo_t> infos(64);
        unsigned count = static_cast<unsigned>(infos.size());
        nvmlReturn_t rc = fn_.get_compute_processes(h, &count, infos.data());
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE && count < 65536) {
            infos.resize(count + 8);
            count = static_cast<unsigned>(infos.size());
            rc = fn_.get_compute_processes(h, &count, infos.data());
        }
        if (!ok(rc, g, "processes", false)) return;
        json list = json::array();
        for (unsigned i = 0; i < count && i < infos.size(); ++i) {
            json p = {{"pid", infos[i].pid}};
            if (infos[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE)
                p["used_memory_bytes"] = infos[i].usedGpuMemory;
            if (infos[i].gpuInstanceId != 0xFFFFFFFFu) p["gpu_instance_id"] = infos[i].gpuInstanceId;
            if (infos[i].computeInstanceId != 0xFFFFFFFFu)
                p["compute_instance_id"] = infos[i].computeInstanceId;
            list.push_back(std::move(p));
        }
        g["processes"] = std::move(list);
    }

    void mig_instances(nvmlDevice_t h, json& g) {
        unsigned current = 0, pending = 0;
        if (!call(fn_.get_mig_mode, g, "mig_mode", h, &current, &pending)) return;
        g["mig_mode"] = current;
        if (pending != current) note(g.value("uuid", std::string("a GPU")) + ": MIG mode pending change");
        if (current != 1 || !fn_.mig_available()) return;
        unsigned max = 0;
        if (!ok(fn_.get_max_mig_device_count(h, &max), g, "mig_handle")) return;
        json list = json::array();
        for (unsigned i = 0; i < max; ++i) {
            nvmlDevice_t instance = nullptr;
            if (fn_.get_mig_device_handle(h, i, &instance) != NVML_SUCCESS || !instance) continue;
            json m = json::object();
            device(instance, m, true);
            list.push_back(std::move(m));
        }
        g["mig_devices"] = std::move(list);
    }

    // GPM: one sample of every device, then gpm_seconds later another, so the metrics cover the same
    // interval on every GPU (what a load phase shows when the kit captures during it).
    void gpm(const std::vector<nvmlDevice_t>& handles, json& gpus) {
        if (!fn_.gpm_available()) {
            note("GPM: this NVML lacks the nvmlGpm* entry points (driver older than R520)");
            return;
        }
        struct Pair {
            json* object;
            nvmlDevice_t device;
            int gpu_instance;  // -1: the whole GPU
            nvmlGpmSample_t first = nullptr, second = nullptr;
        };
        std::vector<Pair> pairs;
        for (std::size_t i = 0; i < handles.size(); ++i) {
            if (!handles[i]) continue;
            json& g = gpus[i];
            nvmlGpmSupport_t support{};
            support.version = NVML_GPM_SUPPORT_VERSION;
            if (!ok(fn_.gpm_query_support(handles[i], &support), g, "gpm_support")) continue;
            g["gpm_supported"] = support.isSupportedDevice != 0;
            if (!support.isSupportedDevice) continue;
            if (g.value("mig_mode", 0) == 1 && g.contains("mig_devices")) {
                for (auto& m : g["mig_devices"])
                    if (m.contains("gpu_instance_id"))
                        pairs.push_back({&m, handles[i], m["gpu_instance_id"].get<int>()});
            } else {
                pairs.push_back({&g, handles[i], -1});
            }
        }
        // A sample that could not be taken is freed and left null, so no pair is built from it.
        auto take = [&](Pair& p, nvmlGpmSample_t& s) {
            if (fn_.gpm_sample_alloc(&s) != NVML_SUCCESS) {
                s = nullptr;
                return;
            }
            const nvmlReturn_t rc =
                p.gpu_instance < 0 ? fn_.gpm_sample_get(p.device, s)
                : fn_.gpm_mig_sample_get
                    ? fn_.gpm_mig_sample_get(p.device, static_cast<unsigned>(p.gpu_instance), s)
                    : NVML_ERROR_FUNCTION_NOT_FOUND;
            if (!ok(rc, *p.object, p.gpu_instance < 0 ? "gpm_sample" : "gpm_mig_sample")) {
                fn_.gpm_sample_free(s);
                s = nullptr;
            }
        };
        for (auto& p : pairs) take(p, p.first);
        const timespec wait{static_cast<time_t>(gpm_seconds_),
                            static_cast<long>((gpm_seconds_ - std::floor(gpm_seconds_)) * 1e9)};
        timespec left = wait;
        while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
        }
        for (auto& p : pairs)
            if (p.first) take(p, p.second);
        for (auto& p : pairs) {
            if (p.first && p.second) metrics(p.first, p.second, *p.object);
            if (p.first) fn_.gpm_sample_free(p.first);
            if (p.second) fn_.gpm_sample_free(p.second);
        }
        meta_["gpm_interval_seconds"] = gpm_seconds_;
    }

    void metrics(nvmlGpmSample_t first, nvmlGpmSample_t second, json& object) {
        nvmlGpmMetricsGet_t request{};
        request.version = NVML_GPM_METRICS_GET_VERSION;
        request.numMetrics = static_cast<unsigned>(std::size(kGpmIds));
        request.sample1 = first;
        request.sample2 = second;
        for (unsigned i = 0; i < request.numMetrics; ++i) request.metrics[i].metricId = kGpmIds[i];
        if (!ok(fn_.gpm_metrics_get(&request), object, "gpm_metrics")) return;
        json out = json::object();
        for (unsigned i = 0; i < request.numMetrics; ++i) {
            const nvmlGpmMetric_t& m = request.metrics[i];
            if (m.nvmlReturn == NVML_SUCCESS && std::isfinite(m.value))
                out[std::to_string(kGpmIds[i])] = m.value;
        }
        object["gpm"] = std::move(out);
    }

    const NvmlLibrary& lib_;
    const NvmlFunctions& fn_;
    double gpm_seconds_;
    json meta_ = json::object();
};

std::string utc_now() {
    const time_t now = ::time(nullptr);
    tm t{};
    ::gmtime_r(&now, &t);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &t);
    return text;
}

}  // namespace

int run_nvml_capture(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {"out", "gpm-seconds"}, {});
    if (!args.positional.empty()) throw UsageError("unexpected argument '" + args.positional.front() + "'");
    const double gpm_seconds =
        args.value("gpm-seconds") ? parse_seconds("--gpm-seconds", *args.value("gpm-seconds"), 0.1, 60) : 1.0;
    const Roots roots = roots_from_environment();
    std::string error;
    auto lib = NvmlLibrary::open(roots.nvml_library, error);
    if (!lib) throw std::runtime_error("nvml-capture: " + error);
    Capture capture(*lib, gpm_seconds);
    json fixture = capture.run();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    fixture["_capture"]["host"] = host;
    fixture["_capture"]["time"] = utc_now();
    fixture["_capture"]["stallscope_version"] = STALLSCOPE_VERSION;
    fixture["_capture"]["nvml_library"] = lib->path();
    for (const auto& missing : lib->missing_symbols())
        fixture["_capture"]["missing_symbols"].push_back(missing);
    const std::string text = fixture.dump(2) + "\n";
    if (const auto out = args.value("out"); out && *out != "-") {
        std::string why;
        if (!write_file_atomically(*out, text, false, why))
            throw std::runtime_error("nvml-capture: " + *out + ": " + why);
        return 0;
    }
    std::fputs(text.c_str(), stdout);
    return 0;
}

}  // namespace stallscope::cli
