// Rules on the job's own cgroup (Snapshot::job_cgroup): what this job suffered, where /proc numbers are
// the whole node's. When the job's numbers exist, the node-wide OOM and pressure rules stay quiet.
#pragma once

#include <vector>

#include "libstallscope/rules/finding.h"

namespace stallscope {

// Share of CFS periods in which the job was throttled at/above which its CPU limit slows it.
inline constexpr double kJobThrottledPeriodsShare = 0.2;
inline constexpr double kJobThrottledMinPeriods = 10;
// memory.current / memory.max at/above which the job is about to be OOM-killed.
inline constexpr double kJobMemoryNearLimitPct = 95;

// job_oom_kill (FAIL_RISK, system): memory.events oom_kill of the job's cgroup grew during the step.
// job_cpu_throttled (SLOW, system): the job was throttled in >= kJobThrottledPeriodsShare of its CFS
//   periods this interval (a CPU limit starving data loaders).
// job_cpu_pressure / job_io_pressure / job_memory_pressure (SLOW, system): the cgroup's own PSI, same
//   thresholds as the node's host_*_pressure.
// job_memory_near_limit (warning, FAST): memory.current >= kJobMemoryNearLimitPct of memory.max.
void job_cgroup_rules(const RuleInput& in, Findings& out);
namespace rule {
inline constexpr RuleDescriptor kJobOomKill{"job_oom_kill", Category::kSystem, Label::kFailRisk, 50};
inline constexpr RuleDescriptor kJobCpuThrottled{"job_cpu_throttled", Category::kSystem, Label::kSlow, 55};
inline constexpr RuleDescriptor kJobCpuPressure{"job_cpu_pressure", Category::kSystem, Label::kSlow, 55};
inline constexpr RuleDescriptor kJobIoPressure{"job_io_pressure", Category::kSystem, Label::kSlow, 53};
inline constexpr RuleDescriptor kJobMemoryPressure{"job_memory_pressure", Category::kSystem, Label::kSlow,
                                                   52};
inline constexpr RuleDescriptor kJobMemoryNearLimit{"job_memory_near_limit", Category::kSystem, Label::kFast,
                                                    kMiddleRank};
}  // namespace rule

// Whether the job's own numbers replace the node-wide ones for OOM kills and for pressure.
bool job_oom_known(const Snapshot& s);
bool job_pressure_known(const Snapshot& s);

// Every code this family emits, for rule_catalog().
inline constexpr const RuleDescriptor* kCgroupRules[] = {
    &rule::kJobOomKill,    &rule::kJobCpuThrottled,   &rule::kJobCpuPressure,
    &rule::kJobIoPressure, &rule::kJobMemoryPressure, &rule::kJobMemoryNearLimit,
};

}  // namespace stallscope
