// Whole-step verdict: folds the findings of every sample into one StepVerdict. Live recording and
// replay both feed it through Profiler::observe, so a replay reproduces the recorded verdict.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libstallscope/rules/finding.h"
#include "libstallscope/util/unique_id.h"

namespace stallscope {

// Orders reasons: tier (label-driving, then UNKNOWN, then informational), symptoms last, earliest
// first_seen first, then causal rank (RuleDescriptor, found by code), then subject.
void order_reasons(std::vector<Reason>& reasons);

// One sample as the accumulator needs it.
struct SampleOutcome {
    double time = 0;
    double interval = 0;  // seconds since the previous sample (0 for the first)
    const Findings* findings = nullptr;
    Label label = Label::kFast;      // per-sample label
    double confidence = 0;           // per-sample confidence: read for a FAST sample only
    bool counters_seen = false;      // any GPU gauge or any counter delta this sample
    bool collectors_failed = false;  // Snapshot::collector_failures non-empty
    std::optional<double> mean_gpu_util;
    const std::string* host = nullptr;          // to name the worst GPU "host:GPU 3"
    const std::vector<Gpu>* gpus = nullptr;     // this sample's GPUs (their display names)
    int gpus_allocated = 0, gpus_measured = 0;  // host_rules.h allocated_gpus / measured_gpus
    std::string activity_hint;                  // issue 15: a FAST sample's hint (GPM-based where present)
};

// One reason of the step as VerdictAccumulator keeps it (outside the class only so that a Finding can
// point at its entry, Finding::verdict_entry).
struct VerdictEntry {
    // Episodes of one reason: maximal runs of consecutive samples in which it fired.
    struct Episodes {
        int count = 0;
        int last_sample = -1;         // index of the last sample it fired in
        double current = 0;           // seconds of the running episode
        double longest = 0;           // longest episode so far
        double first_start = 0;       // when the first episode began
        double last_start = 0;        // when the latest episode began
        double first_length = 0;      // length of the first episode
        double second_start = 0;      // when the second episode began
        double longest_later = 0;     // longest episode after the first
        bool first_at_start = false;  // the first episode began with the step's first sample
    };
    ReasonSummary summary;
    const RuleDescriptor* rule = nullptr;  // the first finding's (nullptr: a finding built by hand)
    // summary.reason's label and severity, raised with them when a later finding is worse.
    Label label = Label::kFast;
    Severity severity = Severity::kInfo;
    SubjectKind kind = SubjectKind::kOther;
    Hint hint = Hint::kNone;
    double first_score = 0, worst_score = 0;
    Episodes episodes;
    int counted_in = -1;  // the last sample (count) that counted it: once per sample, however many fire
    // The latest refresh's message and evidence, when they came as numbers (Finding::late): written into
    // the summary by build().
    LateDetails late;
};

class VerdictAccumulator {
  public:
    // When f's reason (code, subject) first fired in this run, or `fallback` if it never did.
    double first_seen(const Finding& f, double fallback) const;
    // Whether add() would read `f`'s message and evidence: it first fires or beats its worst score
    // (Findings::details_wanted). A refreshing finding is wanted only when it first fires: add() takes
    // the later ones' details from f.late.
    bool wants_details(const Finding& f) const;
    void add(const SampleOutcome& sample);
    StepVerdict build(const Thresholds& t) const;

  private:
    using Entry = VerdictEntry;
    // A number no other accumulator in this process has had, a copy or a moved-to one included: what
    // a Finding's cached entry is checked against (an address could be a destroyed accumulator's).
    struct Id {
        std::uint64_t value = process_unique_id();
        Id() = default;
        Id(const Id&) : value(process_unique_id()) {}
        Id& operator=(const Id&) {
            value = process_unique_id();
            return *this;
        }
    };
    Id id_;
    // f's entry, or nullptr when its reason never fired: through the finding's cached pointer when that
    // still names the same reason (one compare of code and subject), else by key (remembered for next time).
    const Entry* find_entry(const Finding& f) const;
    void count_episode(Entry& e, double start, double seconds);
    std::map<std::string, Entry> entries_;          // key: code + '\x1f' + subject; never erased
    std::map<std::string, std::string> gpu_names_;  // gpu_key -> "GPU 3"
    std::string host_;
    int gpus_allocated_ = 0, gpus_measured_ = 0;
    int samples_ = 0, failed_samples_ = 0, fast_samples_ = 0;
    double fast_confidence_sum_ = 0;
    bool counters_seen_ = false;
    double start_ = 0, end_ = 0;
    double util_sum_ = 0;
    int util_samples_ = 0;
    std::map<std::string, int> activity_hints_;  // issue 15: FAST samples per hint
    // Working space reused between samples (no allocation per finding once warmed up).
    mutable std::string key_;
};

// Confidence of one reason from its severity and how far past its threshold it was (score).
double reason_confidence(Severity severity, double score);

}  // namespace stallscope
