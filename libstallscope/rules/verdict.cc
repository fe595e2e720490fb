#include "libstallscope/rules/verdict.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "libstallscope/rules/gpu_rules.h"
#include "libstallscope/rules/host_rules.h"

namespace stallscope {
namespace {

// code + '\x1f' + subject into `out`, reusing its capacity (called for every finding of every sample).
const std::string& entry_key(const Reason& r, std::string& out) {
    out.assign(r.code).push_back('\x1f');
    out.append(r.subject);
    return out;
}

// Label-driving reasons first (SLOW, FAIL_RISK), then UNKNOWN, then informational ones.
int tier_of(Label label) {
    return label_rank(label) >= 2 ? 0 : label == Label::kUnknown ? 1 : 2;
}

// The rule of an entry, or of its code when its finding was built without one.
const RuleDescriptor* rule_of(const VerdictEntry& e) {
    return e.rule ? e.rule : find_rule(e.summary.reason.code);
}

// How a SLOW reason weighs over time (libstallscope/rules/README.md, "Time"): a start-up episode of a
// symptom is set aside; what remains counts when one episode is sustained or all of them are pervasive.
struct SlowJudgement {
    bool counts = true;
    double startup_seconds = 0;  // the first episode, when it is start-up (0 = none)
    double rest_seconds = 0;     // time the reason held outside start-up
    double rest_share = 0;
    int episodes = 0;  // outside start-up
};

template <typename EpisodesT>
SlowJudgement judge_slow(const EpisodesT& ep, const ReasonSummary& s, bool symptom, double step, int samples,
                         const Thresholds& t) {
    SlowJudgement j;
    if (step <= 0) return j;  // nothing to weigh a single sample against
    const bool runs_to_the_end = ep.last_sample == samples - 1;
    if (symptom && ep.first_at_start && !(ep.count == 1 && runs_to_the_end) &&
        ep.first_length <= t.verdict_startup_max_seconds)
        j.startup_seconds = ep.first_length;
    j.episodes = ep.count - (j.startup_seconds > 0 ? 1 : 0);
    j.rest_seconds = std::max(0.0, s.duration_seconds - j.startup_seconds);
    j.rest_share = std::min(1.0, j.rest_seconds / step);
    const double longest = j.startup_seconds > 0 ? ep.longest_later : ep.longest;
    j.counts = j.episodes > 0 && j.rest_share >= t.verdict_slow_min_share &&
               (longest >= t.verdict_sustained_seconds || j.rest_share >= t.verdict_transient_max_share);
    return j;
}

// A SLOW reason that did not count: kept in the list as info, saying what it was and why it did not count.
template <typename EpisodesT>
void demote_transient(ReasonSummary& s, const EpisodesT& ep, const SlowJudgement& j) {
    const bool dips = s.reason.code == rule::kGpuLowUtilization.code;
    std::string head;
    if (dips) {
        head = "GPU utilization low";
        if (auto it = s.reason.evidence.find("threshold_pct"); it != s.reason.evidence.end())
            if (const double* pct = std::get_if<double>(&it->second))
                head = "GPU utilization below " + fmt_num(*pct) + " %";
    } else {
        head = s.reason.subject;
    }
    std::string what;
    if (j.startup_seconds > 0)
        what = "start-up: the first " + fmt_duration(j.startup_seconds) +
               " of the step (model load, NCCL init, data-loader warm-up)";
    if (j.episodes > 0) {
        const double first = j.startup_seconds > 0 ? ep.second_start : ep.first_start;
        what += (what.empty() ? "" : "; then ") + std::to_string(j.episodes) + " " +
                (dips ? "dip" : "episode") + (j.episodes > 1 ? "s" : "") + " of ~" +
                fmt_duration(j.rest_seconds / j.episodes);
        if (j.episodes >= 2) what += ", every ~" + fmt_duration((ep.last_start - first) / (j.episodes - 1));
        what += " (" + fmt_num(std::round(j.rest_share * 100)) + " % of the step)";
        s.reason.evidence["episodes"] = static_cast<double>(j.episodes);
        s.reason.evidence["typical_episode_seconds"] = j.rest_seconds / j.episodes;
        if (j.episodes >= 2) s.reason.evidence["period_seconds"] = (ep.last_start - first) / (j.episodes - 1);
    }
    if (j.startup_seconds > 0) s.reason.evidence["startup_seconds"] = j.startup_seconds;
    s.reason.message = head + ": " + what + " — " + (j.episodes > 0 ? "transient" : "start-up") +
                       ", not counted against the step. First seen: " + s.reason.message;
    s.reason.severity = to_string(Severity::kInfo);
    s.reason.label = to_string(Label::kFast);
}

}  // namespace

void order_reasons(std::vector<Reason>& reasons) {
    // Each reason's rule and label looked up once, not in every comparison.
    struct Keyed {
        int tier;
        bool symptom;
        int rank;
        std::size_t index;
    };
    std::vector<Keyed> keyed;
    keyed.reserve(reasons.size());
    for (std::size_t i = 0; i < reasons.size(); ++i) {
        const RuleDescriptor* rule = find_rule(reasons[i].code);
        keyed.push_back({tier_of(label_from_string(reasons[i].label).value_or(Label::kFast)),
                         rule && rule->role == Role::kSymptom, rule ? rule->causal_rank : kMiddleRank, i});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const Keyed& a, const Keyed& b) {
        const Reason &x = reasons[a.index], &y = reasons[b.index];
        return std::tie(a.tier, a.symptom, x.first_seen, a.rank, x.subject) <
               std::tie(b.tier, b.symptom, y.first_seen, b.rank, y.subject);
    });
    std::vector<Reason> ordered;
    ordered.reserve(reasons.size());
    for (const Keyed& k : keyed) ordered.push_back(std::move(reasons[k.index]));
    reasons = std::move(ordered);
}

double reason_confidence(Severity severity, double score) {
    const double past = std::log2(std::max(score, 1.0));  // 0 at the threshold, 1 at twice it
    if (severity == Severity::kCritical) return std::min(0.99, 0.9 + 0.03 * past);
    return std::clamp(0.6 + 0.1 * past, 0.6, 0.9);
}

const VerdictEntry* VerdictAccumulator::find_entry(const Finding& f) const {
    if (const Entry* e = f.verdict_entry; e && f.verdict_owner == id_.value &&
                                          same_name(e->summary.reason.code, f.reason.code) &&
                                          same_name(e->summary.reason.subject, f.reason.subject))
        return e;
    const auto it = entries_.find(entry_key(f.reason, key_));
    if (it == entries_.end()) return nullptr;
    f.verdict_owner = id_.value;
    f.verdict_entry = &it->second;  // map nodes stay put, and entries are never erased
    return &it->second;
}

double VerdictAccumulator::first_seen(const Finding& f, double fallback) const {
    const Entry* e = find_entry(f);
    return e ? e->summary.reason.first_seen : fallback;
}

bool VerdictAccumulator::wants_details(const Finding& f) const {
    const Entry* e = find_entry(f);
    return !e || (!f.refresh && f.score > e->worst_score);
}

void VerdictAccumulator::count_episode(Entry& e, double start, double seconds) {
    Entry::Episodes& ep = e.episodes;
    const int index = samples_ - 1;
    if (ep.count > 0 && ep.last_sample == index - 1) {
        ep.current += seconds;
    } else {
        ++ep.count;
        ep.current = seconds;
        ep.last_start = start;
        if (ep.count == 2) ep.second_start = start;
        if (ep.count == 1) {
            ep.first_start = start;
            ep.first_at_start = index == 0 || start <= start_;
        }
    }
    if (ep.count == 1) ep.first_length = ep.current;
    if (ep.count > 1) ep.longest_later = std::max(ep.longest_later, ep.current);
    ep.longest = std::max(ep.longest, ep.current);
    ep.last_sample = index;
}

void VerdictAccumulator::add(const SampleOutcome& s) {
    if (samples_ == 0) start_ = s.time;
    if (s.host && host_.empty()) host_ = *s.host;
    gpus_allocated_ = std::max(gpus_allocated_, s.gpus_allocated);
    gpus_measured_ = std::max(gpus_measured_, s.gpus_measured);
    if (s.gpus && gpu_names_.size() < s.gpus->size())  // names are stable: learn them once
        for (const Gpu& g : *s.gpus)
            if (g.index >= 0) gpu_names_.try_emplace(gpu_key(g), gpu_name(g));
    end_ = std::max(end_, s.time);
    ++samples_;
    if (s.collectors_failed) ++failed_samples_;
    counters_seen_ = counters_seen_ || s.counters_seen;
    if (s.label == Label::kFast) {
        ++fast_samples_;
        fast_confidence_sum_ += s.confidence;
    }
    if (s.mean_gpu_util) util_sum_ += *s.mean_gpu_util, ++util_samples_;
    if (!s.activity_hint.empty() && s.activity_hint != "unknown") ++activity_hints_[s.activity_hint];
    if (!s.findings) return;
    for (const Finding& f : *s.findings) {
        // Entries are found through the finding (find_entry), and inserted here: only add() changes them.
        auto* e = const_cast<Entry*>(find_entry(f));
        const bool fresh = e == nullptr;
        if (fresh) {
            e = &entries_.try_emplace(entry_key(f.reason, key_)).first->second;
            f.verdict_owner = id_.value;
            f.verdict_entry = e;
        }
        if (e->counted_in == samples_) continue;  // one count per (code, subject) per sample
        e->counted_in = samples_;
        if (fresh) {
            e->summary.reason = f.reason;
            e->rule = f.rule;
            e->label = f.label;
            e->severity = f.severity;
            e->kind = f.kind;
            e->hint = f.hint;
            e->first_score = e->worst_score = f.score;
            // A windowed rule knows its condition began before it fired: count that time too.
            e->summary.duration_seconds = f.since > 0 && f.since < s.time ? s.time - f.since : s.interval;
            count_episode(*e, s.time - e->summary.duration_seconds, e->summary.duration_seconds);
        } else {
            e->summary.duration_seconds += s.interval;
            count_episode(*e, s.time - s.interval, s.interval);
            if (f.score > e->worst_score) {
                e->worst_score = f.score;
                if (!f.refresh) e->summary.worst_evidence = f.reason.evidence;
            }
            if (f.refresh && f.late.write) {
                e->late.assign_from(f.late);  // written by build()
            } else if (f.refresh) {
                // The message says "so far": its evidence is the same sample's, not the first one's.
                e->late.write = nullptr;
                e->summary.reason.message = f.reason.message;
                e->summary.reason.evidence = f.reason.evidence;
                e->summary.worst_evidence = f.reason.evidence;
            }
            if (label_rank(f.label) > label_rank(e->label)) {
                // e.g. packet loss that crossed from SLOW to FAIL_RISK: the step carries the worse label
                e->label = f.label;
                e->severity = f.severity;
                e->summary.reason.label = f.reason.label;
                e->summary.reason.severity = f.reason.severity;
            }
        }
        e->summary.last_seen = s.time;
        ++e->summary.samples;
    }
}

StepVerdict VerdictAccumulator::build(const Thresholds& t) const {
    StepVerdict v;
    v.samples = samples_;
    v.gpus_allocated = gpus_allocated_;
    v.gpus_measured = gpus_measured_;
    v.start_time = start_;
    v.end_time = end_;
    const double step = v.duration_seconds();
    struct Ranked {
        ReasonSummary summary;
        SubjectKind kind;
        Label label;  // after a transient SLOW reason's demotion to FAST
        double score;
        int tier;
        bool symptom;
        int causal_rank;
    };
    std::vector<Ranked> ranked;
    bool fail = false, slow = false, stale = false, gpus_unmeasured = false;
    double fail_conf = 0, slow_conf = 0;
    std::set<Hint> hints;
    for (const auto& [key, e] : entries_) {
        ReasonSummary s = e.summary;
        if (e.late.write) {  // the latest refresh, as add() would have kept it
            Reason written;
            written.code = s.reason.code;
            written.subject = s.reason.subject;
            e.late.write(e.late, written);
            s.reason.message = std::move(written.message);
            s.reason.evidence = written.evidence;
            s.worst_evidence = std::move(written.evidence);
        }
        s.share = step > 0 ? std::min(1.0, s.duration_seconds / step)
                           : static_cast<double>(s.samples) / std::max(samples_, 1);
        const RuleDescriptor* rule = rule_of(e);
        const bool symptom = rule && rule->role == Role::kSymptom;
        Label label = e.label;
        const double conf = reason_confidence(e.severity, e.worst_score);
        int tier = 2;
        if (label == Label::kFailRisk) {
            fail = true;
            fail_conf = std::max(fail_conf, conf);
            tier = 0;
        } else if (label == Label::kSlow) {
            const SlowJudgement j = judge_slow(e.episodes, s, symptom, step, samples_, t);
            if (j.counts) {
                slow = true;
                slow_conf = std::max(slow_conf, conf * (0.75 + 0.25 * std::min(1.0, s.share / 0.5)));
                tier = 0;
            } else {
                demote_transient(s, e.episodes, j);
                label = Label::kFast;
            }
        } else if (label == Label::kUnknown) {
            tier = 1;
            if (rule == &rule::kTelemetryStale && s.share >= t.collectors_failing_min_share) stale = true;
            if (rule == &rule::kGpuTelemetryMissing && s.share >= t.collectors_failing_min_share)
                gpus_unmeasured = true;
        }
        if (tier == 0 && e.hint != Hint::kNone) hints.insert(e.hint);
        ranked.push_back({std::move(s), e.kind, label, e.worst_score, tier, symptom,
                          rule ? rule->causal_rank : kMiddleRank});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
        const Reason &x = a.summary.reason, &y = b.summary.reason;
        return std::tie(a.tier, a.symptom, x.first_seen, a.causal_rank, x.subject) <
               std::tie(b.tier, b.symptom, y.first_seen, b.causal_rank, y.subject);
    });

    if (samples_ < 2 || step < t.min_step_seconds) v.unknown_reasons.push_back("step_too_short");
    if (samples_ >= 2 && !counters_seen_) v.unknown_reasons.push_back("no_counters");
    if (samples_ > 0 && failed_samples_ > 0 &&
        static_cast<double>(failed_samples_) / samples_ >= t.collectors_failing_min_share)
        v.unknown_reasons.push_back("collectors_failing");
    if (stale) v.unknown_reasons.push_back("telemetry_stale");
    if (gpus_unmeasured) v.unknown_reasons.push_back("gpu_telemetry_missing");

    if (fail) {
        v.label = kLabelFailRisk;
        v.confidence = fail_conf;
    } else if (slow) {
        v.label = kLabelSlow;
        v.confidence = slow_conf;
    } else if (!v.unknown_reasons.empty()) {
        v.label = kLabelUnknown;
        v.confidence = 0;
    } else {
        v.label = kLabelFast;
        v.confidence = fast_samples_ ? fast_confidence_sum_ / fast_samples_ * fast_samples_ / samples_ : 0;
    }
    if (v.label != kLabelUnknown) v.unknown_reasons.clear();

    if (hints.size() == 1)
        v.bottleneck_hint = to_string(*hints.begin());
    else if (hints.size() > 1)
        v.bottleneck_hint = "mixed";
    else if (const auto top = std::max_element(  // issue 15: the hint most FAST samples agree on
                 activity_hints_.begin(), activity_hints_.end(),
                 [](const auto& a, const auto& b) { return a.second < b.second; });
             v.label == kLabelFast && top != activity_hints_.end() && top->second * 2 > fast_samples_)
        v.bottleneck_hint = top->first;
    else if (v.label == kLabelFast && util_samples_ && util_sum_ / util_samples_ >= 80)
        v.bottleneck_hint = "compute";

    // Worst GPU / port / interface: the worst label first, then the biggest share, then the score.
    auto pick = [&](SubjectKind kind) {
        const Ranked* best = nullptr;
        for (const auto& r : ranked) {
            if (r.kind != kind || r.label == Label::kFast) continue;  // info names no culprit
            auto rank = [](const Ranked& x) {
                return std::make_tuple(x.tier == 0 ? 1 : 0, label_rank(x.label), x.summary.share, x.score);
            };
            if (!best || rank(r) > rank(*best)) best = &r;
        }
        return best ? best->summary.reason.subject : std::string();
    };
    // GPUs by the name people use on the node ("gpu-node-17:GPU 3"); the uuid stays machine-readable.
    // A root cause that names a GPU (a job OOM kill that took the rank on it) names the worst GPU: the
    // hung ranks that follow are its symptom (issue 38).
    v.worst_gpu_uuid = pick(SubjectKind::kGpu);
    if (!ranked.empty() && ranked.front().tier == 0)
        if (auto it = ranked.front().summary.reason.evidence.find("gpu_uuid");
            it != ranked.front().summary.reason.evidence.end())
            if (const std::string* uuid = std::get_if<std::string>(&it->second)) v.worst_gpu_uuid = *uuid;
    if (auto it = gpu_names_.find(v.worst_gpu_uuid); it != gpu_names_.end())
        v.worst_gpu = host_.empty() ? it->second : host_ + ":" + it->second;
    else
        v.worst_gpu = v.worst_gpu_uuid;
    v.worst_port = pick(SubjectKind::kPort);
    v.worst_interface = pick(SubjectKind::kInterface);
    for (auto& r : ranked) v.reasons.push_back(std::move(r.summary));
    return v;
}

}  // namespace stallscope
