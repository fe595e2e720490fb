#include "libstallscope/sources/nvml/nvml_collector.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "libstallscope/sources/nvml/clocks_event_reasons.h"
#include "libstallscope/sources/nvml/pci_bus_id.h"

namespace stallscope {

namespace {

// NVML fills fixed-size char buffers; never trust the terminator.
std::string from_buffer(const char* buffer, std::size_t size) {
    return std::string(buffer, strnlen(buffer, size));
}

// The PCI id from nvmlPciInfo_t: busId (8-digit domain), else busIdLegacy, else the numeric fields.
std::string pci_bus_id_from(const nvmlPciInfo_t& pci) {
    for (std::string_view text :
         {std::string_view(pci.busId, strnlen(pci.busId, sizeof pci.busId)),
          std::string_view(pci.busIdLegacy, strnlen(pci.busIdLegacy, sizeof pci.busIdLegacy))}) {
        if (auto normalized = normalize_pci_bus_id(text)) return *normalized;
    }
    if (pci.bus > 0xff || pci.device > 0x1f) return "";
    PciAddress address;
    address.domain = pci.domain;
    address.bus = static_cast<std::uint8_t>(pci.bus);
    address.device = static_cast<std::uint8_t>(pci.device);
    address.function = 0;
    return format_pci_bus_id(address);
}

// Errors that will not go away by asking again: stop calling the function for this GPU.
bool is_permanent(nvmlReturn_t rc) {
    return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_NO_PERMISSION ||
           rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

std::string gpu_label(const Gpu& gpu) {
    std::string label = "GPU " + std::to_string(gpu.index);
    if (gpu.mig) label += " MIG " + gpu.uuid;
    if (!gpu.pci_bus_id.empty()) label += " (" + gpu.pci_bus_id + ")";
    return label;
}

double monotonic_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

NvmlCollector::NvmlCollector(std::unique_ptr<NvmlLibrary> library) : lib_(std::move(library)) {
    for (const auto& symbol : lib_->missing_symbols())
        warn_once("nvml: " + lib_->path() + " has no " + symbol + " (older driver?): its fields stay null");
    discover();
}

void NvmlCollector::warn_once(std::string message) {
    if (warned_.insert(message).second) pending_warnings_.push_back(std::move(message));
}

void NvmlCollector::on_error(GpuState& gpu, const char* field, int field_id, nvmlReturn_t rc) {
    if (rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_RESET_REQUIRED) gpu.lost = true;
    if (field_id >= 0 && is_permanent(rc)) gpu.disabled[static_cast<std::size_t>(field_id)] = true;
    warn_once("nvml: " + gpu_label(gpu.identity) + ": " + field + " unavailable (" + lib_->error_string(rc) +
              "); left null");
}

void NvmlCollector::discover() {
    const NvmlFunctions& f = lib_->fn();
    std::vector<std::string> no_gpm;
    unsigned int count = 0;
    if (nvmlReturn_t rc = f.get_count(&count); rc != NVML_SUCCESS) {
        warn_once("nvml: nvmlDeviceGetCount_v2 failed (" + lib_->error_string(rc) + "): no GPUs");
        return;
    }
    for (unsigned int i = 0; i < count && i < 1024; ++i) {
        GpuState gpu;
        gpu.identity.index = static_cast<int>(i);
        gpu.identity.vendor = "nvidia";
        const nvmlReturn_t rc = f.get_handle_by_index(i, &gpu.handle);
        // NO_PERMISSION is how cgroup device constraints (Slurm ConstrainDevices) hide other jobs' GPUs:
        // nvmlDeviceGetCount_v2 still counts them (spank-design.md section 3). Not an error.
        if (rc == NVML_ERROR_NO_PERMISSION) continue;
        if (rc != NVML_SUCCESS) {
            on_error(gpu, "handle (nvmlDeviceGetHandleByIndex_v2)", -1, rc);
            continue;
        }
        Gpu& id = gpu.identity;
        nvmlPciInfo_t pci{};
        if (!f.get_pci_info) {
        } else if (nvmlReturn_t e = f.get_pci_info(gpu.handle, &pci); e == NVML_SUCCESS) {
            id.pci_bus_id = pci_bus_id_from(pci);
        } else {
            on_error(gpu, "pci_bus_id", -1, e);
        }
        char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
        if (!f.get_uuid) {
        } else if (nvmlReturn_t e = f.get_uuid(gpu.handle, buffer, sizeof buffer); e == NVML_SUCCESS) {
            id.uuid = from_buffer(buffer, sizeof buffer);
        } else {
            on_error(gpu, "uuid", -1, e);
        }
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
        if (!f.get_name) {
        } else if (nvmlReturn_t e = f.get_name(gpu.handle, name, sizeof name); e == NVML_SUCCESS) {
            id.name = from_buffer(name, sizeof name);
        } else {
            on_error(gpu, "name", -1, e);
        }
        unsigned int value = 0;
        if (!f.get_minor_number) {
        } else if (nvmlReturn_t e = f.get_minor_number(gpu.handle, &value); e == NVML_SUCCESS) {
            id.minor_number = static_cast<int>(value);
        } else {
            on_error(gpu, "minor_number", -1, e);
        }
        // The maximum SM clock is a property of the board: read once.
        if (!f.get_max_clock) {
        } else if (nvmlReturn_t e = f.get_max_clock(gpu.handle, NVML_CLOCK_SM, &value); e == NVML_SUCCESS) {
            id.max_sm_clock_mhz = value;
        } else {
            on_error(gpu, "max_sm_clock_mhz", -1, e);
        }
        // The most the PCIe link can run at is the board's and the slot's: read once (what it runs at now,
        // every sample).
        PcieLink most;
        for (auto [to, get] : {std::pair{&most.max_generation, f.get_max_pcie_link_generation},
                               {&most.max_width, f.get_max_pcie_link_width}}) {
            if (!get || gpu.disabled[kPcieLink]) {
            } else if (nvmlReturn_t e = get(gpu.handle, &value); e == NVML_SUCCESS) {
                *to = value;
            } else {
                on_error(gpu, "pcie_link", kPcieLink, e);
            }
        }
        if (most != PcieLink{}) id.pcie_link = most;
        discover_depth(gpu, no_gpm);
        gpus_.push_back(std::move(gpu));
    }
    if (!no_gpm.empty()) {
        std::string list;
        for (const auto& name : no_gpm) list += (list.empty() ? "" : ", ") + name;
        warn_once("nvml: GPM unsupported on " + list +
                  " (needs a Hopper or newer GPU and driver >= 520): SM/tensor/DRAM activity absent, rules "
                  "fall back to utilization and power");
    }
}

void NvmlCollector::sample(Snapshot& snapshot) {
    double now = monotonic_seconds();
    if (first_sample_) {
        // GPM needs two samples >= 100 ms apart: take the first now and wait out the rest once, so a
        // one-shot `stallscope --json` has the metrics too. Later samples pair with the previous one.
        first_sample_ = false;
        bool any_gpm = false;
        for (auto& gpu : gpus_) {
            std::optional<GpmMetrics> ignored;
            if (gpu.gpm) any_gpm |= gpu.gpm->sample(now, ignored) == NVML_SUCCESS;
            for (auto& instance : gpu.instances)
                if (instance.gpm) any_gpm |= instance.gpm->sample(now, ignored) == NVML_SUCCESS;
        }
        if (any_gpm) std::this_thread::sleep_for(std::chrono::duration<double>(kGpmMinPairSeconds + 0.005));
        now = monotonic_seconds();
    }
    for (auto& gpu : gpus_) {
        Gpu out = gpu.identity;
        gpu.lost = false;
        sample_gpu(gpu, out);
        if (gpu.lost)
            snapshot.warnings.push_back("nvml: " + gpu_label(gpu.identity) +
                                        " reports GPU lost / reset required (see Xid 79 / 48 / 95)");
        if (gpu.mig_mode && !gpu.instances.empty()) {
            sample_mig_instances(gpu, out, snapshot.context, now, snapshot);
            continue;  // in MIG mode the GPU is its instances; its own utilization is "not supported"
        }
        sample_depth(gpu, out, now);
        snapshot.gpus.push_back(std::move(out));
    }
    for (auto& warning : pending_warnings_) snapshot.warnings.push_back(std::move(warning));
    pending_warnings_.clear();
}

void NvmlCollector::sample_gpu(GpuState& gpu, Gpu& out) {
    const NvmlFunctions& f = lib_->fn();
    nvmlDevice_t h = gpu.handle;
    // Runs `call` unless the function is missing or was given up on for this GPU; on failure leaves the
    // field null and reports through on_error.
    auto query = [&](Field field, const char* name, bool present, auto&& call) -> bool {
        if (!present || gpu.disabled[field]) return false;
        const nvmlReturn_t rc = call();
        if (rc == NVML_SUCCESS) return true;
        on_error(gpu, name, field, rc);
        return false;
    };

    nvmlUtilization_t util{};
    if (query(kUtilization, "utilization_pct", f.get_utilization,
              [&] { return f.get_utilization(h, &util); }))
        out.utilization_pct = util.gpu;
    nvmlMemory_t memory{};
    if (query(kMemory, "memory_used_bytes", f.get_memory, [&] { return f.get_memory(h, &memory); })) {
        out.memory_used_bytes = memory.used;
        out.memory_total_bytes = memory.total;
    }
    unsigned int value = 0;
    if (query(kTemperature, "temperature_c", f.get_temperature,
              [&] { return f.get_temperature(h, NVML_TEMPERATURE_GPU, &value); }))
        out.temperature_c = value;
    if (query(kPower, "power_w", f.get_power_usage, [&] { return f.get_power_usage(h, &value); }))
        out.power_w = value / 1000.0;  // mW
    if (query(kPowerLimit, "power_limit_w", f.get_enforced_power_limit,
              [&] { return f.get_enforced_power_limit(h, &value); }))
        out.power_limit_w = value / 1000.0;  // mW
    if (query(kSmClock, "sm_clock_mhz", f.get_clock, [&] { return f.get_clock(h, NVML_CLOCK_SM, &value); }))
        out.sm_clock_mhz = value;

    unsigned long long mask = 0;
    if (query(kClocksEvent, "throttle_reasons", f.get_clocks_event_reasons,
              [&] { return f.get_clocks_event_reasons(h, &mask); })) {
        out.throttle_reasons_mask = mask;
        out.throttle_reasons = decode_clocks_event_reasons(mask);
    }
    nvmlViolationTime_t violation{};
    if (query(kViolationPower, "violation_power_ns", f.get_violation_status,
              [&] { return f.get_violation_status(h, NVML_PERF_POLICY_POWER, &violation); }))
        out.violation_power_ns = violation.violationTime;
    if (query(kViolationThermal, "violation_thermal_ns", f.get_violation_status,
              [&] { return f.get_violation_status(h, NVML_PERF_POLICY_THERMAL, &violation); }))
        out.violation_thermal_ns = violation.violationTime;

    unsigned long long count = 0;
    if (query(kEccUncorrected, "ecc_uncorrected", f.get_total_ecc_errors, [&] {
            return f.get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &count);
        }))
        out.ecc_uncorrected = count;
    if (query(kEccCorrected, "ecc_corrected", f.get_total_ecc_errors, [&] {
            return f.get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &count);
        }))
        out.ecc_corrected = count;

    unsigned int corr = 0, unc = 0, pending = 0, failure = 0;
    if (query(kRemappedRows, "remapped_rows_pending", f.get_remapped_rows,
              [&] { return f.get_remapped_rows(h, &corr, &unc, &pending, &failure); })) {
        out.remapped_rows_pending = pending ? 1 : 0;
        out.remapped_rows_failure = failure ? 1 : 0;
    }
    if (query(kEnergy, "energy_mj", f.get_total_energy, [&] { return f.get_total_energy(h, &count); }))
        out.energy_mj = count;

    // The PCIe link's generation and width now, beside the most it can run at (discover()): a part only
    // when NVML answered for it (a GPU it says nothing about claims nothing).
    PcieLink link = out.pcie_link.value_or(PcieLink{});
    // A pair, not a structured binding: clang before 16 cannot capture a binding in the lambda.
    for (const auto& part :
         {std::pair{&link.generation, f.get_pcie_link_generation}, {&link.width, f.get_pcie_link_width}})
        if (query(kPcieLink, "pcie_link", part.second, [&] { return part.second(h, &value); }))
            *part.first = value;
    if (link != PcieLink{}) out.pcie_link = link;
}

}  // namespace stallscope
