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
