// GPU rules that judge a window of samples, each a small class holding only its own per-GPU history.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// Hardware slowdown bits of NVML's clocks-event mask, decoded from throttle_reasons_mask or from the
// names (GPUd counts only these three; SW power cap / SW thermal are informational).
enum HwSlowdownBits : unsigned { kHwSlowdown = 0x8, kHwThermal = 0x40, kHwPowerBrake = 0x80 };
unsigned hw_slowdown_bits(const Gpu& gpu);

// gpu_hw_slowdown / gpu_hw_thermal_slowdown / gpu_power_brake (SLOW): the bit was set in at least
// hw_slowdown_min_share of the last hw_slowdown_window_seconds (GPUd: >= 6 of 10 minutes); a step
// shorter than the window is judged over what was observed, and says so ("of the 40 s observed"). A
// kind set on every GPU of the node is one node-wide reason (subject "gpus"), not one per GPU.
class HwSlowdownRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Sample {
        double time, dt;
        unsigned bits;
    };
    // The window with running sums, so a sample costs O(1) instead of a re-sum of up to 600 entries
    // (this rule was the helper's largest per-sample cost, bench/RESULTS.md).
    struct Window {
        std::deque<Sample> samples;
        double total = 0;
        double set[3] = {0, 0, 0};  // per kind, in the order of the kinds table in the .cc
    };
    struct Hit {
        const Gpu* gpu;
        double share, total, since;
    };
    PerGpu<Window> history_;
    double last_time_ = -1;
    std::vector<Hit> hits_[3];  // this sample's, per kind; reused between samples
};
namespace rule {
inline constexpr RuleDescriptor kGpuPowerBrake{"gpu_power_brake", Category::kGpu, Label::kSlow, 40};
inline constexpr RuleDescriptor kGpuHwThermalSlowdown{"gpu_hw_thermal_slowdown", Category::kGpu, Label::kSlow,
                                                      41};
inline constexpr RuleDescriptor kGpuHwSlowdown{"gpu_hw_slowdown", Category::kGpu, Label::kSlow, 42};
}  // namespace rule

// gpu_thermal_throttle (SLOW): the SM clock fell >= thermal_clock_drop_pct below the busy peak of this
// step while the temperature rose >= thermal_temp_rise_c since that peak (a power cap drops clocks too,
// but without the temperature rise).
class ThermalThrottleRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Peak {
        double clock = 0, temp = 0, since = 0;
    };
    PerGpu<Peak> peaks_;
};
namespace rule {
inline constexpr RuleDescriptor kGpuThermalThrottle{"gpu_thermal_throttle", Category::kGpu, Label::kSlow, 43};
}  // namespace rule

// gpu_busy_wait_hang (FAIL_RISK): utilization >= hang_util_pct while power <= hang_power_max_frac of
// the power limit for >= hang_min_samples consecutive samples: kernels spin on a flag (a collective
// waiting for a peer that will never come) instead of computing. One reason names all hung GPUs.
class BusyWaitHangRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Run {
        int samples = 0;
        double since = 0;
    };
    PerGpu<Run> runs_;
};
namespace rule {
inline constexpr RuleDescriptor kGpuBusyWaitHang{"gpu_busy_wait_hang", Category::kGpu, Label::kFailRisk, 70};
}  // namespace rule

// gpu_idle (SLOW): N of M GPUs at <= gpu_idle_util_pct continuously for >= gpu_idle_window_seconds.
class IdleGpuRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    std::map<std::string, double, std::less<>> idle_since_;
};
namespace rule {
inline constexpr RuleDescriptor kGpuIdle{"gpu_idle", Category::kGpu, Label::kSlow, 81, Role::kSymptom};
}  // namespace rule

// gpu_straggler (SLOW): a busy GPU whose utilization is >= straggler_util_gap_pct points below the
// median of its peers, or whose power is >= straggler_power_gap_frac below the peer median, for
// straggler_min_samples consecutive samples (idle GPUs are gpu_idle's business).
class StragglerRule {
  public:
    void evaluate(const RuleInput& in, Findings& out);

  private:
    struct Run {
        int samples = 0;
        double since = 0;
    };
    std::map<std::string, Run, std::less<>> runs_;
    std::vector<double> util_, power_;  // every busy GPU's values, sorted; reused between samples
    std::vector<const Gpu*> busy_;
};
namespace rule {
inline constexpr RuleDescriptor kGpuStraggler{"gpu_straggler", Category::kGpu, Label::kSlow, 80,
                                              Role::kSymptom};
}  // namespace rule

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kGpuWindowRules[] = {
    &rule::kGpuPowerBrake,      &rule::kGpuHwThermalSlowdown, &rule::kGpuHwSlowdown,
    &rule::kGpuThermalThrottle, &rule::kGpuBusyWaitHang,      &rule::kGpuIdle,
    &rule::kGpuStraggler,
};

}  // namespace stallscope
