// Per-GPU telemetry from an initialised NVML library. Handles and identity (name, UUID, PCI id, minor,
// max SM clock) are read once at construction; gauges and counters every sample.
#pragma once

#include <array>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libstallscope/model/snapshot.h"
#include "libstallscope/sources/nvml/nvml_library.h"

namespace stallscope {

class NvmlCollector {
  public:
    explicit NvmlCollector(std::unique_ptr<NvmlLibrary> library);

    // Appends one Gpu per visible device and the warnings this sample adds.
    void sample(Snapshot& snapshot);
    std::size_t gpu_count() const { return gpus_.size(); }

    // Every per-sample query, one bit of "gave up on it" per GPU.
    enum Field : int {
        kUtilization,
        kMemory,
        kTemperature,
        kPower,
        kPowerLimit,
        kSmClock,
        kClocksEvent,
        kViolationPower,
        kViolationThermal,
        kEccUncorrected,
        kEccCorrected,
        kRemappedRows,
        kEnergy,
        kFieldCount
    };

  private:
    struct GpuState {
        nvmlDevice_t handle = nullptr;
        Gpu identity;  // index, uuid, pci_bus_id, name, vendor, minor, max SM clock
        std::array<bool, kFieldCount> disabled{};
        bool lost = false;  // a query this sample said GPU_IS_LOST / RESET_REQUIRED
    };

    void discover();
    // Handles a failed query: permanent errors disable the field for this GPU; every distinct
    // (GPU, field, error) is warned about once per run.
    void on_error(GpuState& gpu, const char* field, int field_id, nvmlReturn_t rc);
    void warn_once(std::string message);
    void sample_gpu(GpuState& gpu, Gpu& out);

    std::unique_ptr<NvmlLibrary> lib_;
    std::vector<GpuState> gpus_;
    std::set<std::string> warned_;
    std::vector<std::string> pending_warnings_;  // moved into the next snapshot
};

}  // namespace stallscope
