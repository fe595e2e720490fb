// libnvidia-ml loaded with dlopen (dynolog's DcgmApiStub pattern): the binary builds, links and runs on
// machines without the NVIDIA driver, and tests point it at a fake library (tests/fake_nvml).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "libstallscope/sources/nvml/nvml_abi.h"

namespace stallscope {

// Function pointers resolved once with dlsym. Required entry points are never null in a loaded
// library; optional ones are null when this driver's library lacks the symbol.
struct NvmlFunctions {
    // Required.
    decltype(&nvmlInit_v2) init = nullptr;
    decltype(&nvmlShutdown) shutdown = nullptr;
    decltype(&nvmlDeviceGetCount_v2) get_count = nullptr;
    decltype(&nvmlDeviceGetHandleByIndex_v2) get_handle_by_index = nullptr;
    // Optional.
    decltype(&nvmlErrorString) error_string = nullptr;
    decltype(&nvmlDeviceGetName) get_name = nullptr;
    decltype(&nvmlDeviceGetUUID) get_uuid = nullptr;
    decltype(&nvmlDeviceGetPciInfo_v3) get_pci_info = nullptr;  // _v3, else _v2 (same struct)
    decltype(&nvmlDeviceGetMinorNumber) get_minor_number = nullptr;
    decltype(&nvmlDeviceGetUtilizationRates) get_utilization = nullptr;
    decltype(&nvmlDeviceGetMemoryInfo) get_memory = nullptr;
    decltype(&nvmlDeviceGetTemperature) get_temperature = nullptr;
    decltype(&nvmlDeviceGetPowerUsage) get_power_usage = nullptr;
    decltype(&nvmlDeviceGetEnforcedPowerLimit) get_enforced_power_limit = nullptr;
    decltype(&nvmlDeviceGetClockInfo) get_clock = nullptr;
    decltype(&nvmlDeviceGetMaxClockInfo) get_max_clock = nullptr;
    // nvmlDeviceGetCurrentClocksEventReasons (driver >= 535), else ...ClocksThrottleReasons.
    decltype(&nvmlDeviceGetCurrentClocksEventReasons) get_clocks_event_reasons = nullptr;
    decltype(&nvmlDeviceGetViolationStatus) get_violation_status = nullptr;
    decltype(&nvmlDeviceGetTotalEccErrors) get_total_ecc_errors = nullptr;
    decltype(&nvmlDeviceGetRemappedRows) get_remapped_rows = nullptr;
    decltype(&nvmlDeviceGetTotalEnergyConsumption) get_total_energy = nullptr;
    // Depth (issue 15): NVLink/PCIe field values, processes, MIG, GPM. All optional.
    decltype(&nvmlDeviceGetFieldValues) get_field_values = nullptr;
    decltype(&nvmlDeviceGetComputeRunningProcesses_v3) get_compute_processes = nullptr;
    decltype(&nvmlDeviceGetMigMode) get_mig_mode = nullptr;
    decltype(&nvmlDeviceGetMaxMigDeviceCount) get_max_mig_device_count = nullptr;
    decltype(&nvmlDeviceGetMigDeviceHandleByIndex) get_mig_device_handle = nullptr;
    decltype(&nvmlDeviceGetGpuInstanceId) get_gpu_instance_id = nullptr;
    decltype(&nvmlDeviceGetComputeInstanceId) get_compute_instance_id = nullptr;
    // GPM: usable only when every one of these resolved (gpm_available()).
    decltype(&nvmlGpmQueryDeviceSupport) gpm_query_support = nullptr;
    decltype(&nvmlGpmSampleAlloc) gpm_sample_alloc = nullptr;
    decltype(&nvmlGpmSampleFree) gpm_sample_free = nullptr;
    decltype(&nvmlGpmSampleGet) gpm_sample_get = nullptr;
    decltype(&nvmlGpmMetricsGet) gpm_metrics_get = nullptr;
    decltype(&nvmlGpmMigSampleGet) gpm_mig_sample_get = nullptr;  // per MIG instance; optional within GPM

    bool gpm_available() const {
        return gpm_query_support && gpm_sample_alloc && gpm_sample_free && gpm_sample_get && gpm_metrics_get;
    }
    bool mig_available() const { return get_mig_mode && get_max_mig_device_count && get_mig_device_handle; }
};

class NvmlLibrary {
  public:
    // dlopen(path) (a bare name is searched like any shared library), resolve the symbols, nvmlInit_v2.
    // Returns null and sets `error` ("libnvidia-ml.so.1: cannot open shared object file ...", "nvmlInit_v2
    // failed: Driver Not Loaded") when NVML is unusable.
    static std::unique_ptr<NvmlLibrary> open(const std::string& path, std::string& error);
    ~NvmlLibrary();  // nvmlShutdown + dlclose
    NvmlLibrary(const NvmlLibrary&) = delete;
    NvmlLibrary& operator=(const NvmlLibrary&) = delete;

    const NvmlFunctions& fn() const { return fn_; }
    const std::string& path() const { return path_; }
    // The optional symbols this library lacks ("nvmlDeviceGetRemappedRows"), for one warning per run.
    const std::vector<std::string>& missing_symbols() const { return missing_; }
    // nvmlErrorString, or "NVML error <n>" when the library has none.
    std::string error_string(nvmlReturn_t rc) const;

  private:
    NvmlLibrary() = default;
    void* handle_ = nullptr;
    bool initialised_ = false;
    std::string path_;
    NvmlFunctions fn_;
    std::vector<std::string> missing_;
};

}  // namespace stallscope
