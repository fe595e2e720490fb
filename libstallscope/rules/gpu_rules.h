// GPU rules that need no history: gauges of the current sample, ECC deltas and Xid events.
#pragma once

#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// gpu_low_utilization (SLOW): mean utilization of the step's GPUs < gpu_util_low_pct. A symptom; the
// verdict orders it after any cause found in the same step.
void gpu_low_utilization_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuLowUtilization{"gpu_low_utilization", Category::kGpu, Label::kSlow, 82,
                                                   Role::kSymptom};
}  // namespace rule

// gpu_memory_high (warning, label FAST): memory used / total >= gpu_memory_high_pct on a GPU.
void gpu_memory_high_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuMemoryHigh{"gpu_memory_high", Category::kGpu, Label::kFast, kMiddleRank};
}  // namespace rule

// gpu_temperature_high (warning, label FAST): temperature >= gpu_temp_warn_c, i.e. close to HW slowdown.
void gpu_temperature_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuTemperatureHigh{"gpu_temperature_high", Category::kGpu, Label::kFast,
                                                    kMiddleRank};
}  // namespace rule

// FAIL_RISK: gpu_ecc_uncorrected (volatile uncorrected ECC delta > 0 in the step), gpu_row_remap_pending
// (flag set: the GPU needs a reset), gpu_row_remap_failure (flag set: RMA candidate).
void gpu_ecc_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuEccUncorrected{"gpu_ecc_uncorrected", Category::kGpu, Label::kFailRisk,
                                                   11};
inline constexpr RuleDescriptor kGpuRowRemapFailure{"gpu_row_remap_failure", Category::kGpu, Label::kFailRisk,
                                                    12};
inline constexpr RuleDescriptor kGpuRowRemapPending{"gpu_row_remap_pending", Category::kGpu, Label::kFailRisk,
                                                    13};
}  // namespace rule

// Xid classes (node-health-anchors section 1.3 and 6, GPUd xid.go):
//   critical -> gpu_xid_critical  (FAIL_RISK, drain/reset: 48, 62, 64, 74, 79, 95, 109, 119, 120, ...)
//   app      -> gpu_xid_app_error (FAIL_RISK, the application faulted: 13, 31, 43, 45, 94)
//   warning  -> gpu_xid_warning   (SLOW: 92 high single-bit ECC rate, unknown codes)
//   info     -> gpu_xid_info      (FAST: 63 row-remap recorded, 152, 153, ...)
// XidEvent::severity from the kmsg source can raise a code's class to critical, never lower it.
enum class XidClass { kInfo, kWarning, kApp, kCritical };
XidClass xid_class(int code, const std::string& source_severity);
const char* xid_class_name(XidClass c);

// Xid events of this interval (Snapshot::xid_events and Gpu::xid, deduplicated per GPU and code),
// attributed to the step's GPU by index or PCI bus id. An Xid on a GPU that is not the step's is info.
void xid_rule(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kGpuXidCritical{"gpu_xid_critical", Category::kGpu, Label::kFailRisk, 10};
inline constexpr RuleDescriptor kGpuXidAppError{"gpu_xid_app_error", Category::kGpu, Label::kFailRisk, 60};
inline constexpr RuleDescriptor kGpuXidWarning{"gpu_xid_warning", Category::kGpu, Label::kSlow, 61};
inline constexpr RuleDescriptor kGpuXidInfo{"gpu_xid_info", Category::kGpu, Label::kFast, kMiddleRank};
inline constexpr RuleDescriptor kGpuXidOtherGpu{"gpu_xid_other_gpu", Category::kGpu, Label::kFast,
                                                kMiddleRank};
}  // namespace rule

// "PCI:0000:41:00" / "00000000:41:00.0" -> "41:00", for matching kmsg bus ids to NVML ones.
std::string normalize_bus_id(const std::string& bus_id);

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kGpuRules[] = {
    &rule::kGpuLowUtilization, &rule::kGpuMemoryHigh,      &rule::kGpuTemperatureHigh,
    &rule::kGpuEccUncorrected, &rule::kGpuRowRemapFailure, &rule::kGpuRowRemapPending,
    &rule::kGpuXidCritical,    &rule::kGpuXidAppError,     &rule::kGpuXidWarning,
    &rule::kGpuXidInfo,        &rule::kGpuXidOtherGpu,
};

}  // namespace stallscope
