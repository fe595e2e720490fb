// Per-GPU telemetry from an initialised NVML library. Handles and identity (name, UUID, PCI id, minor,
// max SM clock) are read once at construction; gauges and counters every sample.
#pragma once

#include <array>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libstallscope/model/snapshot.h"
#include "libstallscope/sources/nvml/nvml_depth.h"
#include "libstallscope/sources/nvml/nvml_library.h"

namespace stallscope {

class NvmlCollector {
  public:
    explicit NvmlCollector(std::unique_ptr<NvmlLibrary> library);

    // Appends one Gpu per visible device and the warnings this sample adds. A GPU in MIG mode is
    // reported as its MIG instances (those named in the step's CUDA_VISIBLE_DEVICES when it names any).
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
        kPcieLink,
        kInterconnect,
        kProcesses,
        kGpm,
        kFieldCount
    };

  private:
    struct GpuState {
        nvmlDevice_t handle = nullptr;
        Gpu identity;  // index, uuid, pci_bus_id, name, vendor, minor, max SM clock
        std::array<bool, kFieldCount> disabled{};
        bool lost = false;                // a query this sample said GPU_IS_LOST / RESET_REQUIRED
        std::unique_ptr<GpmSampler> gpm;  // null: GPM unsupported here (pre-Hopper, old driver)
        bool mig_mode = false;
        std::vector<GpuState> instances;  // MIG instances of this GPU (identity.mig set)
    };

    void discover();
    // Handles a failed query: permanent errors disable the field for this GPU; every distinct
    // (GPU, field, error) is warned about once per run.
    void on_error(GpuState& gpu, const char* field, int field_id, nvmlReturn_t rc);
    void warn_once(std::string message);
    void sample_gpu(GpuState& gpu, Gpu& out);
    // GPM, NVLink/PCIe field values and processes (nvml_depth.h); MIG instances get GPM and processes.
    void sample_depth(GpuState& gpu, Gpu& out, double now);
    void discover_depth(GpuState& gpu, std::vector<std::string>& no_gpm);
    void discover_mig(GpuState& gpu);
    void sample_mig_instances(GpuState& parent, const Gpu& parent_out, const JobContext& context, double now,
                              Snapshot& snapshot);

    std::unique_ptr<NvmlLibrary> lib_;
    std::vector<GpuState> gpus_;
    std::set<std::string> warned_;
    std::vector<std::string> pending_warnings_;  // moved into the next snapshot
    bool first_sample_ = true;
};

}  // namespace stallscope
