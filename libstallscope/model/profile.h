// What the profiler concludes: per sample (Profile) and for a whole step (StepVerdict).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "libstallscope/model/flat_map.h"

namespace stallscope {

inline constexpr const char* kLabelFast = "FAST";
inline constexpr const char* kLabelSlow = "SLOW";
inline constexpr const char* kLabelFailRisk = "FAIL_RISK";
inline constexpr const char* kLabelUnknown = "UNKNOWN";

// Numbers stay numbers in JSON (integral doubles are written as integers).
using EvidenceValue = std::variant<double, std::string>;
// Name order, as std::map's (the JSON is the same), in one allocation: a rule that fires builds a fresh
// Evidence every sample (a faulty GPU: every second for the whole job), and a node per entry was most of
// the cost of a firing rule.
using Evidence = FlatMap<EvidenceValue>;

struct Reason {
    std::string code;       // stable snake_case id: fabric_congestion, gpu_thermal_throttle, ...
    std::string category;   // gpu | fabric | network | system | profiler | telemetry | nccl
    std::string severity;   // info | warning | critical
    std::string label;      // the label this reason pushes towards: SLOW | FAIL_RISK | UNKNOWN | FAST
    std::string subject;    // what it is about: "mlx5_0/1", "GPU-1234…", "eth0", "host"
    std::string message;    // one human sentence naming the subject and the numbers
    Evidence evidence;      // the numbers that fired, with their thresholds
    double first_seen = 0;  // sample time (epoch seconds) when this reason first fired in the run
};

struct Profile {
    std::string label = kLabelUnknown;
    double confidence = 0;
    std::vector<Reason> reasons;              // reasons[0] is the root cause
    std::string bottleneck_hint = "unknown";  // compute | network | memory | mixed | unknown
    std::string unknown_reason;               // set when label is UNKNOWN
};

// One reason across a whole step: when it was first and last seen and how much of the step it covered.
struct ReasonSummary {
    Reason reason;            // the first occurrence (evidence of the sample where it first fired)
    Evidence worst_evidence;  // evidence of the sample where it was worst, when the rule ranks them
    double last_seen = 0;
    int samples = 0;              // samples in which it fired
    double duration_seconds = 0;  // sum of the intervals in which it fired
    double share = 0;             // duration / step duration, 0..1
};

struct StepVerdict {
    std::string label = kLabelUnknown;
    double confidence = 0;
    std::vector<ReasonSummary> reasons;  // earliest anomaly first: the root cause before its symptoms
    std::string bottleneck_hint = "unknown";
    std::vector<std::string> unknown_reasons;  // codes: step_too_short, no_counters, collectors_failing
    // Named when a reason is about one. worst_gpu as people name it ("gpu-node-17:GPU 3"), its uuid
    // (or bus id) in worst_gpu_uuid.
    std::string worst_gpu, worst_port, worst_interface;
    std::string worst_gpu_uuid;
    // GPUs allocated to the step (scheduler, else visible devices, else seen) and the most of them measured
    // in one sample (with a utilization value): "gpus=0/2" when the GPU collector had nothing to say.
    int gpus_allocated = 0, gpus_measured = 0;
    int samples = 0;
    double start_time = 0, end_time = 0;
    double duration_seconds() const { return end_time > start_time ? end_time - start_time : 0; }
};

}  // namespace stallscope
