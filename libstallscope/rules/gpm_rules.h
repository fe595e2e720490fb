// Rules on what the GPUs really do (issue 15): GPM activity (SM, tensor, DRAM, PCIe, NVLink), NVLink and
// PCIe error counters, and processes of other jobs or users on the step's GPUs. Thresholds that are not
// (yet) in Thresholds are the named constants below.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// A "busy" GPU whose SMs are mostly idle: utilization only says some kernel ran (dstack#2359).
inline constexpr double kLowSmActivityPct = 25;  // mean SM activity below this ...
inline constexpr double kLowSmBusyUtilPct = 50;  // ... while utilization reads at least this
// Spinning, judged on GPM where present: SM activity at most this, no tensor work, no DRAM traffic.
inline constexpr double kSpinSmActiveMaxPct = 30;
inline constexpr double kSpinTensorMaxPct = 1;
inline constexpr double kSpinDramMaxPct = 2;
// Bottleneck hint from GPM: SM activity at/above which the GPU counts as computing; DRAM bandwidth
// at/above which it is memory-bound; NVLink (all links, TX+RX) / PCIe rates meaning "communicating".
inline constexpr double kHintComputeSmPct = 60;
inline constexpr double kHintMemoryDramPct = 70;
inline constexpr double kHintNvlinkMibPerS = 20000;
inline constexpr double kHintPcieMibPerS = 8000;
// Job cgroup PSI (cpu some / io full avg10) at/above which an under-used GPU is waiting on input.
inline constexpr double kHintInputPressurePct = 10;

// Whether GPM says this GPU is spinning (busy-wait hang): nullopt when the GPU has no GPM data, so the
// caller falls back to utilization and power. On MIG (no utilization) SM activity alone decides.
std::optional<bool> gpm_spinning(const Gpu& gpu, const Thresholds& t);

// SM activity when GPM measured it: what "idle" is decided on where present (nullopt: use utilization).
std::optional<double> gpm_sm_active(const Gpu& gpu);

// compute | memory | network (NVLink/PCIe/fabric: communication) | input (host CPU / I/O), from the
// step's GPUs' GPM means and the job's own pressure or CPU throttling (from `rates`, when given);
// nullopt when GPM is absent or nothing stands out.
std::optional<std::string> gpm_bottleneck_hint(const Snapshot& s, const Rates* rates = nullptr);

// Which of a sample's GPUs are the step's, by position in s.gpus: all visible GPUs when the scheduler names
// none (ConstrainDevices hides the others from NVML); else those CUDA_VISIBLE_DEVICES or the step's gres
// indices name by uuid / MIG parent uuid / index. When nothing matches at all (renumbered devices), every
// GPU counts. Whether any matches is settled once, so asking for every GPU costs O(GPUs x names), where
// asking GPU by GPU from scratch re-read every name for every GPU (O(n^3) strings, four rules a sample).
class StepGpus {
  public:
    explicit StepGpus(const Snapshot& s);
    bool operator[](std::size_t i) const;

  private:
    const Snapshot& s_;
    bool every_ = false;  // nothing named, or nothing named matches: every GPU counts
};

// gpu_low_sm_activity (SLOW): the step's GPUs read >= kLowSmBusyUtilPct utilization (or none, on MIG)
// but mean GPM SM activity < kLowSmActivityPct. Its hint says what they wait for (gpm_bottleneck_hint).
void gpu_low_sm_activity_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuLowSmActivity{"gpu_low_sm_activity", Category::kGpu, Label::kSlow, 83,
                                                  Role::kSymptom};
}  // namespace rule

// gpu_nvlink_errors (fabric): NVLink CRC / replay error deltas > 0 -> SLOW; recovery errors (the link
// retrained) -> FAIL_RISK. gpu_pcie_replay (fabric, SLOW): PCIe replay counter delta > 0.
void gpu_link_error_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuNvlinkErrors{"gpu_nvlink_errors", Category::kFabric, Label::kSlow, 33};
inline constexpr RuleDescriptor kGpuPcieReplay{"gpu_pcie_replay", Category::kFabric, Label::kSlow, 34};
}  // namespace rule

// gpu_foreign_process (SLOW, gpu): a process of another job or another user holds one of the step's GPUs
// (its cgroup names another job_*, or another uid outside any job): it competes for SMs and memory. The
// message refreshes: the most memory the process held and how long it has stayed (issue 38: a process
// first seen with 0.55 GiB that held 6.5 GiB for 11 minutes is reported as such, not as first seen).
class ForeignProcessRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Seen {
        double first = 0, last = 0;
        std::uint64_t peak_bytes = 0;
        bool peak_known = false;
    };
    std::map<std::string, Seen, std::less<>> seen_;  // "<gpu key>\x1f<pid>"; pruned when processes leave
};
namespace rule {
inline constexpr RuleDescriptor kGpuForeignProcess{"gpu_foreign_process", Category::kGpu, Label::kSlow, 56};
}  // namespace rule

// gpu_low_sm_activity and the NVLink/PCIe error rules, in order (one line in the profiler).
void gpu_depth_rules(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuPcieLinkDegraded{"gpu_pcie_link_degraded", Category::kFabric,
                                                     Label::kSlow, 35};
}  // namespace rule

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kGpmRules[] = {
    &rule::kGpuLowSmActivity,    &rule::kGpuNvlinkErrors,   &rule::kGpuPcieReplay,
    &rule::kGpuPcieLinkDegraded, &rule::kGpuForeignProcess,
};

}  // namespace stallscope
