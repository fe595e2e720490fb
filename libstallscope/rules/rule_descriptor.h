// What the verdict knows of a rule's reason apart from one finding: its code, category, the label it
// pushes towards, where it sits in a causal chain and whether it is a symptom. Each rule family's header
// describes its codes next to the rules that emit them (k...Rules lists); rule_catalog() (profiler.cc)
// gathers them.
#pragma once

#include <span>
#include <string_view>

#include "libstallscope/rules/vocabulary.h"

namespace stallscope {

// Whether a reason is a cause or a symptom of one: symptoms (low/idle/straggling GPUs) sort after every
// cause of the same tier, whatever their time, and a symptom's start-up episode does not count.
enum class Role : bool { kCause, kSymptom };

// Causal rank: lower = further upstream (a dead link before the loss it causes, loss before congestion,
// throttling before low utilization). The bands: 0-9 telemetry, 10-19 GPU hardware faults, 20-39 fabric
// and GPU links, 40-49 GPU clocks, 50-59 host and job, 60-69 GPU application errors, 70-79 hangs, 80-89
// GPU symptoms. kMiddleRank: a reason with no place in a chain (information, warnings) sits between the
// application errors and the hangs.
inline constexpr int kMiddleRank = 65;

struct RuleDescriptor {
    std::string_view code;  // stable snake_case id: fabric_congestion, gpu_thermal_throttle, ...
    Category category;
    Label label;  // the label it pushes towards; a rule may raise or lower it for one finding
    int causal_rank;
    Role role = Role::kCause;
};

// Every described rule code, from each family's list.
std::span<const RuleDescriptor* const> rule_catalog();
// The descriptor of `code`, nullptr for a code no rule describes (a job-level reason: node_straggler).
const RuleDescriptor* find_rule(std::string_view code);

// By code, for reasons read back from the model (a Reason, a verdict file): kMiddleRank and not a
// symptom for a code no rule describes.
int causal_rank(std::string_view code);
bool is_symptom(std::string_view code);

}  // namespace stallscope
