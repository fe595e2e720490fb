// Host rules (procfs: PSI, meminfo, vmstat, stat) and telemetry rules (is the data itself trustworthy?).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// host_memory_pressure (SLOW): psi memory full avg10 >= psi_memory_full_pct.
// host_io_pressure (SLOW): psi io full avg10 >= psi_io_full_pct.
// host_cpu_pressure (SLOW): psi cpu some avg10 >= psi_cpu_some_pct (data loaders starved of CPU).
void host_pressure_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kHostMemoryPressure{"host_memory_pressure", Category::kSystem, Label::kSlow,
                                                    52};
inline constexpr RuleDescriptor kHostIoPressure{"host_io_pressure", Category::kSystem, Label::kSlow, 53};
inline constexpr RuleDescriptor kHostCpuPressure{"host_cpu_pressure", Category::kSystem, Label::kSlow, 55};
}  // namespace rule

// host_memory_low (SLOW): MemAvailable / MemTotal <= mem_available_low_pct.
void host_memory_low_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kHostMemoryLow{"host_memory_low", Category::kSystem, Label::kSlow, 51};
}  // namespace rule

// host_oom_kill (FAIL_RISK): /proc/vmstat oom_kill delta > 0 during the step.
void host_oom_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kHostOomKill{"host_oom_kill", Category::kSystem, Label::kFailRisk, 50};
}  // namespace rule

// host_blocked_processes (SLOW): procs_blocked >= procs_blocked_max for procs_blocked_min_samples
// consecutive samples (GPUd: D-state processes in 5 consecutive checks; usually a hung filesystem).
class BlockedProcessesRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    int run_ = 0;
    double since_ = 0;
};
namespace rule {
inline constexpr RuleDescriptor kHostBlockedProcesses{"host_blocked_processes", Category::kSystem,
                                                      Label::kSlow, 54};
}  // namespace rule

// collector_failed (UNKNOWN): a collector failed or overran its deadline this sample
// (Snapshot::collector_failures); its counters are missing, so silence must not read as FAST.
void collector_failure_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kCollectorFailed{"collector_failed", Category::kTelemetry, Label::kUnknown,
                                                 0};
}  // namespace rule

// GPUs the step was allocated (JobContext::gpus, else visible_devices, else the GPUs the sampler saw).
std::size_t allocated_gpus(const Snapshot& s);
// GPUs measured in this sample: a utilization from NVML or an SM activity from GPM (MIG slices).
std::size_t measured_gpus(const Snapshot& s);

// gpu_telemetry_missing: the step was allocated GPUs that this sample did not measure (NVML not
// loadable, a GPU missing from NVML, utilization "Not Supported"). UNKNOWN when none was measured
// (silence about the GPUs must not read as FAST); a warning on a FAST sample when some were, and the
// profiler lowers the confidence by the share measured.
void gpu_telemetry_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuTelemetryMissing{"gpu_telemetry_missing", Category::kTelemetry,
                                                     Label::kUnknown, kMiddleRank};
}  // namespace rule

// telemetry_stale (UNKNOWN): a counter family that moved earlier in the step (all RDMA port counters of
// the node; one GPU's energy counter) has been frozen for >= stale_seconds and >= stale_min_samples
// samples while samples keep coming: a stuck collector or cached reads, not a quiet node.
class StaleTelemetryRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Family {
        std::uint64_t fingerprint = 0;
        bool seen = false, moved = false;
        int frozen_samples = 0;
        double frozen_since = 0;
    };
    void track(Family& f, std::uint64_t fingerprint, double now);
    Family rdma_;  // all RDMA port counters of the node; its fingerprint: rdma_changes_
    std::vector<Counter> rdma_last_, rdma_walked_;  // their values last sample; scratch without rdma_values
    std::uint64_t rdma_changes_ = 0;                // samples in which any of them differed from the last
    PerGpu<Family> gpu_energy_;                     // its energy counter
};
namespace rule {
inline constexpr RuleDescriptor kTelemetryStale{"telemetry_stale", Category::kTelemetry, Label::kUnknown, 1};
}  // namespace rule

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kHostRules[] = {
    &rule::kHostMemoryPressure, &rule::kHostIoPressure,      &rule::kHostCpuPressure,
    &rule::kHostMemoryLow,      &rule::kHostOomKill,         &rule::kHostBlockedProcesses,
    &rule::kCollectorFailed,    &rule::kGpuTelemetryMissing, &rule::kTelemetryStale,
};

}  // namespace stallscope
