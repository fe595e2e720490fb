// libnvidia-ml loaded with dlopen (dynolog's DcgmApiStub pattern): the binary builds, links and runs on
// machines without the NVIDIA driver, and tests point it at a fake library (tests/fake_nvml).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "libstallscope/sources/nvml/nvml_abi.h"

namespace stallscope {

// The optional entry points, one line each: X(member of NvmlFunctions, C function, fallback symbol or
// nullptr). Each is resolved by its name (else by the fallback's, a function of the same signature) and,
// when neither is there, named once in missing_symbols(): its fields stay null. A new NVML query is its
// prototype in nvml_abi.h, a line here and its call in the collector.
#define STALLSCOPE_NVML_OPTIONAL(X)                                                                   \
    X(error_string, nvmlErrorString, nullptr)                                                         \
    X(get_name, nvmlDeviceGetName, nullptr)                                                           \
    X(get_uuid, nvmlDeviceGetUUID, nullptr)                                                           \
    X(get_pci_info, nvmlDeviceGetPciInfo_v3, "nvmlDeviceGetPciInfo_v2") /* the same struct */         \
    X(get_minor_number, nvmlDeviceGetMinorNumber, nullptr)                                            \
    X(get_utilization, nvmlDeviceGetUtilizationRates, nullptr)                                        \
    X(get_memory, nvmlDeviceGetMemoryInfo, nullptr)                                                   \
    X(get_temperature, nvmlDeviceGetTemperature, nullptr)                                             \
    X(get_power_usage, nvmlDeviceGetPowerUsage, nullptr)                                              \
    X(get_enforced_power_limit, nvmlDeviceGetEnforcedPowerLimit, nullptr)                             \
    X(get_clock, nvmlDeviceGetClockInfo, nullptr)                                                     \
    X(get_max_clock, nvmlDeviceGetMaxClockInfo, nullptr)                                              \
    /* driver >= 535; older ones have the same function under its old name */                         \
    X(get_clocks_event_reasons, nvmlDeviceGetCurrentClocksEventReasons,                               \
      "nvmlDeviceGetCurrentClocksThrottleReasons")                                                    \
    X(get_violation_status, nvmlDeviceGetViolationStatus, nullptr)                                    \
    X(get_total_ecc_errors, nvmlDeviceGetTotalEccErrors, nullptr)                                     \
    X(get_remapped_rows, nvmlDeviceGetRemappedRows, nullptr)                                          \
    X(get_total_energy, nvmlDeviceGetTotalEnergyConsumption, nullptr)                                 \
    X(get_pcie_link_generation, nvmlDeviceGetCurrPcieLinkGeneration, nullptr)                         \
    X(get_pcie_link_width, nvmlDeviceGetCurrPcieLinkWidth, nullptr)                                   \
    X(get_max_pcie_link_generation, nvmlDeviceGetMaxPcieLinkGeneration, nullptr)                      \
    X(get_max_pcie_link_width, nvmlDeviceGetMaxPcieLinkWidth, nullptr)                                \
    /* NVLink / PCIe field values (issue 15) */                                                       \
    X(get_field_values, nvmlDeviceGetFieldValues, nullptr)                                            \
    /* only the _v3 name: _v1/_v2 fill smaller structs (the header #defines the plain name to _v3) */ \
    X(get_compute_processes, nvmlDeviceGetComputeRunningProcesses_v3, nullptr)

// Function pointers resolved once with dlsym. Required entry points are never null in a loaded
// library; optional ones are null when this driver's library lacks the symbol.
struct NvmlFunctions {
    // Required.
    decltype(&nvmlInit_v2) init = nullptr;
    decltype(&nvmlShutdown) shutdown = nullptr;
    decltype(&nvmlDeviceGetCount_v2) get_count = nullptr;
    decltype(&nvmlDeviceGetHandleByIndex_v2) get_handle_by_index = nullptr;
    // Optional, from the list above.
#define STALLSCOPE_NVML_MEMBER(member, function, fallback) decltype(&function) member = nullptr;
    STALLSCOPE_NVML_OPTIONAL(STALLSCOPE_NVML_MEMBER)
#undef STALLSCOPE_NVML_MEMBER
    // MIG and GPM (issue 15), resolved without a warning each: their absence is the driver's age.
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
    bool mig_available() const {
        return get_mig_mode && get_max_mig_device_count && get_mig_device_handle;
    }
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
