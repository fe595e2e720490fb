// What NVML says beyond the gauges (issue 15): GPM activity from ping-pong sample pairs, NVLink/PCIe
// field values, and the processes on a device. Each returns an NVML status so the collector's
// warn-once / give-up-on-permanent-errors policy applies unchanged.
#pragma once

#include <optional>
#include <vector>

#include "libstallscope/model/snapshot.h"
#include "libstallscope/sources/nvml/nvml_library.h"

namespace stallscope {

// NVML's "internal sample refresh rate": two GPM samples closer than this give no metrics.
inline constexpr double kGpmMinPairSeconds = 0.1;

// Two GPM sample buffers used alternately (plazonic's exporter does the same), so each collector sample
// costs one nvmlGpmSampleGet and the metrics cover exactly the interval between two collector samples.
// For a MIG instance, samples come from nvmlGpmMigSampleGet(parent, gpu instance id).
class GpmSampler {
  public:
    GpmSampler(const NvmlFunctions& fn, nvmlDevice_t device, std::optional<unsigned> gpu_instance_id);
    ~GpmSampler();
    GpmSampler(const GpmSampler&) = delete;
    GpmSampler& operator=(const GpmSampler&) = delete;

    // Takes a sample at monotonic time `now`. When the previous sample is >= kGpmMinPairSeconds old,
    // `out` gets the metrics over the pair (a metric NVML declined is null). A call sooner than that
    // takes nothing and keeps the older sample as the pair's start. Not SUCCESS: nothing taken.
    nvmlReturn_t sample(double now, std::optional<GpmMetrics>& out);
    bool has_baseline() const { return newest_ >= 0; }
    double baseline_time() const { return newest_ >= 0 ? taken_at_[newest_] : 0; }

  private:
    nvmlReturn_t take(int slot);
    const NvmlFunctions& fn_;
    nvmlDevice_t device_;
    std::optional<unsigned> gpu_instance_id_;
    nvmlGpmSample_t buffers_[2] = {nullptr, nullptr};
    double taken_at_[2] = {0, 0};
    int newest_ = -1;
};

// nvmlDeviceGetFieldValues for the NVLink and PCIe counters, one call. Returns SUCCESS with `out` set
// when at least one field answered; `failed` gets the ids that did not (for one warning).
nvmlReturn_t read_interconnect(const NvmlFunctions& fn, nvmlDevice_t device,
                               std::optional<GpuInterconnect>& out, std::vector<unsigned>& failed);

// nvmlDeviceGetComputeRunningProcesses_v3, growing the buffer once when NVML says it is too small.
nvmlReturn_t read_processes(const NvmlFunctions& fn, nvmlDevice_t device, std::vector<GpuProcess>& out);

// "MIG-<uuid>" (driver >= 470) or "MIG-GPU-<parent uuid>/<gi>/<ci>" (older) naming this instance.
bool visible_entry_names_mig(const std::string& entry, const Gpu& instance);

}  // namespace stallscope
