// NvmlCollector's issue-15 half: GPM, NVLink/PCIe field values, processes, MIG instances.
#include <algorithm>
#include <cstring>

#include "libstallscope/sources/nvml/nvml_collector.h"

namespace stallscope {

namespace {

std::string uuid_of(const NvmlFunctions& f, nvmlDevice_t handle) {
    char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (!f.get_uuid || f.get_uuid(handle, buffer, sizeof buffer) != NVML_SUCCESS) return "";
    return std::string(buffer, strnlen(buffer, sizeof buffer));
}

std::string field_list(const std::vector<unsigned>& ids) {
    std::string out;
    for (unsigned id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

}  // namespace

void NvmlCollector::discover_depth(GpuState& gpu, std::vector<std::string>& no_gpm) {
    const NvmlFunctions& f = lib_->fn();
    discover_mig(gpu);
    if (!f.gpm_available()) {
        no_gpm.push_back("GPU " + std::to_string(gpu.identity.index));
        return;
    }
    nvmlGpmSupport_t support{};
    support.version = NVML_GPM_SUPPORT_VERSION;
    if (f.gpm_query_support(gpu.handle, &support) != NVML_SUCCESS || !support.isSupportedDevice) {
        no_gpm.push_back("GPU " + std::to_string(gpu.identity.index));
        return;
    }
    if (gpu.mig_mode) {
        // GPM per MIG instance (nvmlGpmMigSampleGet on the parent); the parent's own GPM is not the step's.
        for (auto& instance : gpu.instances)
            if (f.gpm_mig_sample_get && instance.identity.mig && instance.identity.mig->gpu_instance_id)
                instance.gpm = std::make_unique<GpmSampler>(
                    f, gpu.handle, static_cast<unsigned>(*instance.identity.mig->gpu_instance_id));
        return;
    }
    gpu.gpm = std::make_unique<GpmSampler>(f, gpu.handle, std::nullopt);
}

void NvmlCollector::discover_mig(GpuState& gpu) {
    const NvmlFunctions& f = lib_->fn();
    if (!f.mig_available()) return;
    unsigned int current = 0, pending = 0;
    if (f.get_mig_mode(gpu.handle, &current, &pending) != NVML_SUCCESS || current != NVML_DEVICE_MIG_ENABLE)
        return;  // NOT_SUPPORTED on GPUs without MIG: not news
    gpu.mig_mode = true;
    gpu.disabled[kUtilization] = true;  // NVML has no utilization for a GPU in MIG mode: not a warning
    unsigned int max = 0;
    if (nvmlReturn_t rc = f.get_max_mig_device_count(gpu.handle, &max); rc != NVML_SUCCESS) {
        on_error(gpu, "MIG instances (nvmlDeviceGetMaxMigDeviceCount)", -1, rc);
        return;
    }
    for (unsigned int i = 0; i < max && i < 64; ++i) {
        GpuState instance;
        if (f.get_mig_device_handle(gpu.handle, i, &instance.handle) != NVML_SUCCESS) continue;  // empty slot
        Gpu& id = instance.identity;
        id.index = gpu.identity.index;
        id.vendor = "nvidia";
        id.name = gpu.identity.name;
        id.pci_bus_id = gpu.identity.pci_bus_id;
        id.uuid = uuid_of(f, instance.handle);
        MigInstance mig;
        mig.parent_uuid = gpu.identity.uuid;
        mig.parent_pci_bus_id = gpu.identity.pci_bus_id;
        mig.parent_index = gpu.identity.index;
        unsigned int value = 0;
        if (f.get_gpu_instance_id && f.get_gpu_instance_id(instance.handle, &value) == NVML_SUCCESS)
            mig.gpu_instance_id = static_cast<int>(value);
        if (f.get_compute_instance_id && f.get_compute_instance_id(instance.handle, &value) == NVML_SUCCESS)
            mig.compute_instance_id = static_cast<int>(value);
        id.mig = mig;
        gpu.instances.push_back(std::move(instance));
    }
}

void NvmlCollector::sample_depth(GpuState& gpu, Gpu& out, double now) {
    const NvmlFunctions& f = lib_->fn();
    if (gpu.gpm && !gpu.disabled[kGpm]) {
        std::optional<GpmMetrics> metrics;
        if (nvmlReturn_t rc = gpu.gpm->sample(now, metrics); rc != NVML_SUCCESS)
            on_error(gpu, "gpm", kGpm, rc);
        out.gpm = metrics;
    }
    if (f.get_field_values && !gpu.disabled[kInterconnect] && !out.mig) {
        std::vector<unsigned> failed;
        std::optional<GpuInterconnect> links;
        if (nvmlReturn_t rc = read_interconnect(f, gpu.handle, links, failed); rc != NVML_SUCCESS)
            on_error(gpu, "interconnect (NVLink/PCIe field values)", kInterconnect, rc);
        else if (!failed.empty())
            warn_once("nvml: GPU " + std::to_string(out.index) + ": field values " + field_list(failed) +
                      " unavailable (not supported by this GPU or driver); left null");
        out.interconnect = links;
    }
    if (f.get_compute_processes && !gpu.disabled[kProcesses]) {
        std::vector<GpuProcess> processes;
        if (nvmlReturn_t rc = read_processes(f, gpu.handle, processes); rc != NVML_SUCCESS)
            on_error(gpu, "processes", kProcesses, rc);
        else
            out.processes = std::move(processes);
    }
}

void NvmlCollector::sample_mig_instances(GpuState& parent, const Gpu& parent_out, const JobContext& context,
                                         double now, Snapshot& snapshot) {
    const NvmlFunctions& f = lib_->fn();
    // The step's slices, when its CUDA_VISIBLE_DEVICES names MIG devices; else every instance.
    const bool step_names_mig = std::any_of(context.visible_devices.begin(), context.visible_devices.end(),
                                            [](const std::string& e) { return e.rfind("MIG-", 0) == 0; });
    for (auto& instance : parent.instances) {
        if (step_names_mig &&
            std::none_of(context.visible_devices.begin(), context.visible_devices.end(),
                         [&](const std::string& e) { return visible_entry_names_mig(e, instance.identity); }))
            continue;
        Gpu out = instance.identity;
        // NVML has no utilization for a MIG device; power, temperature, clocks and the GPU-wide error
        // counters are the parent's (mig.gauges_from_parent). Memory is the instance's own.
        out.temperature_c = parent_out.temperature_c;
        out.power_w = parent_out.power_w;
        out.power_limit_w = parent_out.power_limit_w;
        out.sm_clock_mhz = parent_out.sm_clock_mhz;
        out.max_sm_clock_mhz = parent_out.max_sm_clock_mhz;
        out.throttle_reasons_mask = parent_out.throttle_reasons_mask;
        out.throttle_reasons = parent_out.throttle_reasons;
        out.ecc_uncorrected = parent_out.ecc_uncorrected;
        out.remapped_rows_pending = parent_out.remapped_rows_pending;
        out.remapped_rows_failure = parent_out.remapped_rows_failure;
        nvmlMemory_t memory{};
        if (f.get_memory && !instance.disabled[kMemory]) {
            if (nvmlReturn_t rc = f.get_memory(instance.handle, &memory); rc == NVML_SUCCESS) {
                out.memory_used_bytes = memory.used;
                out.memory_total_bytes = memory.total;
            } else {
                on_error(instance, "memory_used_bytes", kMemory, rc);
            }
        }
        instance.disabled[kInterconnect] = true;  // NVLink/PCIe are the parent's, not an instance's
        sample_depth(instance, out, now);
        snapshot.gpus.push_back(std::move(out));
    }
}

}  // namespace stallscope
