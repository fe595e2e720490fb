#include "libstallscope/rules/profiler.h"

#include <algorithm>
#include <vector>

#include "libstallscope/rules/cgroup_rules.h"  // issue 15: GPU depth and the job cgroup
#include "libstallscope/rules/gpm_rules.h"
#include "libstallscope/rules/gpu_rules.h"
#include "libstallscope/rules/rule_descriptor.h"

namespace stallscope {
namespace {

bool has_counters(const Snapshot& s) {
    if (!s.gpus.empty() || !s.rdma.empty() || s.host_stats.mem_total_bytes) return true;
    return std::any_of(s.interfaces.begin(), s.interfaces.end(),
                       [](const NetInterface& i) { return std::string_view(i.name) != "lo"; });
}

bool any_deltas(const Rates& r) {
    return !r.host.empty() || !r.interfaces.empty() || !r.rdma_counters.empty() ||
           !r.rdma_hw_counters.empty() || !r.gpus.empty();
}

std::optional<double> mean_gpu_util(const Snapshot& s) {
    double sum = 0;
    int n = 0;
    for (const auto& g : s.gpus)
        if (g.utilization_pct) sum += *g.utilization_pct, ++n;
    if (n == 0) return std::nullopt;
    return sum / n;
}

// How much of the node the sample could judge: GPUs (the share of the allocated ones measured), network
// (deltas), host. 0..1.
double coverage(const Snapshot& s, const Rates* r) {
    double parts = 0;
    if (const std::size_t allocated = allocated_gpus(s); allocated > 0)
        parts += static_cast<double>(measured_gpus(s)) / static_cast<double>(allocated);
    if (r && (!r->rdma_counters.empty() || !r->rdma_hw_counters.empty() || !r->interfaces.empty()))
        parts += 1;
    if (s.host_stats.psi.memory_full_avg10 || s.host_stats.mem_available_bytes) parts += 1;
    return parts / 3;
}

Finding delta_rules_pending() {
    return make_finding(rule::kDeltaRulesPending, Severity::kInfo, "profiler", SubjectKind::kOther,
                        "first sample: lifetime counters are reported but not judged; delta rules (RDMA "
                        "loss/congestion, PFC, link flaps, ECC, OOM kills) need a second sample",
                        Evidence{{"samples", 1.0}}, 1);
}

}  // namespace

Profiler::Profiler(Thresholds t) : t_(t) {}

const Snapshot* Profiler::last_sample() const {
    return last_ ? &*last_ : nullptr;
}

const Rates* Profiler::last_rates() const {
    return rates_.rates();
}

void Profiler::run_rules(const RuleInput& in, Findings& out) {
    out.clear();
    // telemetry
    collector_failure_rule(in, out);
    gpu_telemetry_rule(in, out);
    stale_.evaluate(in, out);
    // fabric: these six judge the sample's RDMA ports alone (a node without any, most of them, skips them)
    if (!in.cur.rdma.empty()) {
        port_state_.evaluate(in, out);
        link_flap_rule(in, out);
        rdma_error_rule(in, out);
        rdma_loss_rule(in, out);
        rdma_congestion_rule(in, out);
        cc_misconfig_rule(in, out);
    }
    pfc_.evaluate(in, out);
    interface_errors_rule(in, out);
    // nccl (RAS, Inspector, logs, nccl-tests)
    nccl_ras_failure_rule(in, out);
    nccl_missing_.evaluate(in, out);
    nccl_hang_.evaluate(in, out);
    nccl_inspector_.evaluate(in, out);
    nccl_log_rule(in, out);
    nccl_test_rule(in, out);
    // gpu
    xid_rule(in, out);
    gpu_ecc_rule(in, out);
    hw_slowdown_.evaluate(in, out);
    thermal_.evaluate(in, out);
    hang_.evaluate(in, out);
    idle_.evaluate(in, out);
    straggler_.evaluate(in, out);
    gpu_low_utilization_rule(in, out);
    gpu_memory_high_rule(in, out);
    gpu_temperature_rule(in, out);
    gpu_depth_rules(in, out);    // issue 15: GPM activity, NVLink/PCIe errors
    foreign_.evaluate(in, out);  // processes of other jobs or users on the step's GPUs
    // host
    host_oom_rule(in, out);
    job_cgroup_rules(in, out);  // issue 15: the job's own OOM kills, throttling, pressure
    host_memory_low_rule(in, out);
    host_pressure_rule(in, out);
    blocked_.evaluate(in, out);
}

Profile Profiler::observe(const Snapshot& s) {
    Profile p;
    profile(s, {}, &p);
    last_ = s;
    return p;
}

Profile Profiler::observe(Snapshot&& s) {
    Profile p;
    profile(s, {}, &p);
    if (last_)
        std::swap(*last_, s);  // `s` now holds the previous sample, for Sampler::sample(Snapshot&&)
    else
        last_ = std::move(s);
    return p;
}

Profile Profiler::observe_view(const Snapshot& s) {
    last_.reset();  // before profiling: the rules see no previous sample they could hold on to
    Profile p;
    profile(s, {}, &p);
    return p;
}

void Profiler::observe_view_for_verdict(const Snapshot& s, SnapshotShape shape) {
    last_.reset();
    profile(s, shape, nullptr);
}

void Profiler::profile(const Snapshot& s, SnapshotShape shape, Profile* out) {
    const bool first = !rates_.has_previous();
    const double previous_time = rates_.previous_time();
    const double interval = !first && s.time > previous_time ? s.time - previous_time : 0;
    // Into the same Rates every sample: rewritten in place, no allocation while the layout holds.
    const Rates* rates = rates_.update(s, shape);
    if (!s.nccl.empty()) peer_names_.learn(s);
    // The rows of the sample's ports, GPUs, interfaces and host in Rates, and its GPUs' slots: again only
    // when its entities or the Rates tables may differ from the last sample's. A lender's shape id
    // promises the same entities (snapshot.h); the tracker reshapes its tables only when it rebuilds.
    const RowsKey rows_key{shape.id, &s, rates, rates_.rebuilds()};
    if (shape.id == 0 || rows_key != rows_key_) {
        port_rows_into(s, rates, ports_);
        entity_rows_into(s, rates, rows_);
        gpu_slots_.assign(s);
        rows_key_ = rows_key;
    }
    const RuleInput in{
        s,      last_ ? &*last_ : nullptr, rates, t_, &peer_names_, rates_.rdma_values(), &ports_,
        &rows_, &gpu_slots_.slots()};

    Findings& findings = findings_;
    findings.set_verdict_only(out ? nullptr : &verdict_);  // what the Profile would show
    run_rules(in, findings);
    // The Profile's reasons say when each first fired in the run. The verdict reads a finding's first_seen
    // only when its reason is new, where first_seen() gives this same fallback: the verdict-only pass
    // skips the lookup.
    for (Finding& f : findings)
        f.reason.first_seen =
            out ? verdict_.first_seen(f, f.since > 0 ? f.since : s.time) : (f.since > 0 ? f.since : s.time);

    // The sample's label, confidence and hint as ranks and views: replay's verdict-only pass builds no
    // Profile, and its strings were a tenth of the profiler's own time.
    int worst = 0;
    double conf = 0;
    Hint hint = Hint::kNone;  // the hint of the worst findings; `mixed` when they differ
    bool mixed = false;
    std::string unknown;
    for (const Finding& f : findings) worst = std::max(worst, label_rank(f.label));
    for (const Finding& f : findings) {
        const int rank = label_rank(f.label);
        if (rank != worst) continue;
        // The verdict reads a sample's confidence only when it is FAST (the rank-0 findings' is then
        // replaced below): the verdict-only pass skips the log2 of every firing finding.
        if (out) conf = std::max(conf, reason_confidence(f.severity, f.score));
        if (f.hint != Hint::kNone && hint == Hint::kNone)
            hint = f.hint;
        else if (f.hint != Hint::kNone && hint != f.hint)
            mixed = true;
        if (rank == 1) {  // UNKNOWN
            const char* what =
                f.rule == &rule::kCollectorFailed ? "collectors_failing" : f.reason.code.c_str();
            unknown += (unknown.empty() ? "" : "; ") + std::string(what) + ": " + f.reason.subject;
        }
    }
    const bool counters = has_counters(s);
    if (worst == 0 && !counters) {
        worst = 1;
        unknown = "no_counters: the sample holds no GPU, RDMA, interface or host data";
    } else if (worst == 0 && first) {
        // Gauges alone cannot say FAST: loss, PFC, ECC and OOM kills are deltas (--help: "UNKNOWN (not
        // enough data: first sample ...)"). Positive evidence on the first sample still labels it.
        worst = 1;
        unknown = "first_sample: delta rules need a second sample";
    }
    const Label label = static_cast<Label>(worst);
    const auto util = mean_gpu_util(s);
    if (worst == 0) conf = (rates ? 0.6 : 0.4) + 0.35 * coverage(s, rates);
    if (worst == 1) conf = 0;
    std::string_view bottleneck = "unknown";
    std::optional<std::string> gpm_hint;  // issue 15
    if (worst >= 2 && hint != Hint::kNone && !mixed)
        bottleneck = to_string(hint);
    else if (worst >= 2 && mixed)
        bottleneck = "mixed";
    else if (worst == 0 && (gpm_hint = gpm_bottleneck_hint(s, rates)))
        bottleneck = *gpm_hint;
    else if (worst == 0 && util && *util >= 80)
        bottleneck = "compute";

    SampleOutcome outcome;
    outcome.time = s.time;
    outcome.interval = interval;
    outcome.findings = &findings;
    outcome.label = label;
    outcome.confidence = conf;
    outcome.counters_seen = (rates && any_deltas(*rates)) || util.has_value();
    outcome.collectors_failed = !s.collector_failures.empty();
    outcome.mean_gpu_util = util;
    outcome.host = &s.host;
    outcome.gpus = &s.gpus;
    outcome.gpus_allocated = static_cast<int>(allocated_gpus(s));
    outcome.gpus_measured = static_cast<int>(measured_gpus(s));
    if (worst == 0) outcome.activity_hint = bottleneck;  // issue 15
    verdict_.add(outcome);
    if (!out) return;  // everything above feeds the verdict; what follows only the Profile

    Profile& p = *out;
    p.label = to_string(label);
    p.confidence = conf;
    p.bottleneck_hint = bottleneck;
    if (worst == 1) p.unknown_reason = std::move(unknown);
    for (Finding& f : findings) p.reasons.push_back(f.take_reason());
    if (first) {
        Finding pending = delta_rules_pending();
        pending.reason.first_seen = s.time;
        p.reasons.push_back(std::move(pending.reason));
    }
    order_reasons(p.reasons);
}

StepVerdict Profiler::verdict() const {
    return verdict_.build(t_);
}

namespace {

using Family = std::span<const RuleDescriptor* const>;

// The descriptors of every family the profiler runs (each family header lists its own), sorted by code
// for find_rule: the verdict and the job report look reasons up by code where they only have the
// model's strings (a Profile's reasons, a verdict file).
std::vector<const RuleDescriptor*> gather() {
    std::vector<const RuleDescriptor*> all;
    for (const Family family : {Family(kHostRules), Family(kCgroupRules), Family(kFabricRules),
                                Family(kPfcRules), Family(kGpmRules), Family(kGpuRules),
                                Family(kGpuWindowRules), Family(kNcclRules), Family(kProfilerRules)})
        all.insert(all.end(), family.begin(), family.end());
    std::sort(all.begin(), all.end(),
              [](const RuleDescriptor* a, const RuleDescriptor* b) { return a->code < b->code; });
    return all;
}

const std::vector<const RuleDescriptor*>& catalog() {
    static const std::vector<const RuleDescriptor*> all = gather();
    return all;
}

}  // namespace

std::span<const RuleDescriptor* const> rule_catalog() {
    return catalog();
}

const RuleDescriptor* find_rule(std::string_view code) {
    const auto& all = catalog();
    const auto it = std::lower_bound(all.begin(), all.end(), code,
                                     [](const RuleDescriptor* d, std::string_view c) { return d->code < c; });
    return it != all.end() && (*it)->code == code ? *it : nullptr;
}

int causal_rank(std::string_view code) {
    const RuleDescriptor* rule = find_rule(code);
    return rule ? rule->causal_rank : kMiddleRank;
}

bool is_symptom(std::string_view code) {
    const RuleDescriptor* rule = find_rule(code);
    return rule && rule->role == Role::kSymptom;
}

}  // namespace stallscope
