#include "libstallscope/rules/cgroup_rules.h"
#include "libstallscope/rules/gpm_rules.h"

#include <algorithm>

namespace stallscope {
namespace {

Evidence job_evidence(const JobCgroup& c) {
    Evidence ev;
    ev.reserve(kEvidenceEntries);
    ev["cgroup"] = c.path;
    if (!c.job_id.empty()) ev["job_id"] = c.job_id;
    return ev;
}

std::string job_name(const JobCgroup& c) {
    return "job " + (c.job_id.empty() ? c.path : c.job_id);
}

void pressure(const RuleInput& in, const JobCgroup& c, Findings& out) {
    struct Check {
        const Gauge& value;
        double threshold;
        const RuleDescriptor& rule;
        const char* what;
        Hint hint;
    };
    const Check checks[] = {
        {c.psi.memory_full_avg10, in.t.psi_memory_full_pct, rule::kJobMemoryPressure,
         "of the time all its tasks stalled on memory (cgroup PSI memory full avg10) — reclaim at its limit",
         Hint::kMemory},
        {c.psi.io_full_avg10, in.t.psi_io_full_pct, rule::kJobIoPressure,
         "of the time all its tasks stalled on I/O (cgroup PSI io full avg10) — input or checkpoint I/O "
         "bound",
         Hint::kInput},
        {c.psi.cpu_some_avg10, in.t.psi_cpu_some_pct, rule::kJobCpuPressure,
         "of the time its runnable tasks waited for a CPU (cgroup PSI cpu some avg10) — data loaders starved",
         Hint::kInput},
    };
    for (const auto& check : checks) {
        if (!check.value || *check.value < check.threshold || *check.value <= 0) continue;
        Evidence ev = job_evidence(c);
        ev["avg10_pct"] = *check.value;
        ev["threshold_pct"] = check.threshold;
        out.push_back(make_finding(check.rule, Severity::kWarning, "job", SubjectKind::kHost,
                                   job_name(c) + ": " + fmt_num(*check.value) + " % " + check.what +
                                       " (threshold " + fmt_num(check.threshold) + " %)",
                                   std::move(ev), *check.value / std::max(check.threshold, 1e-9),
                                   check.hint));
    }
}

// In the sample of a job OOM kill: the step's GPU that NVML lists with no process of this job while the
// step's other GPUs still hold theirs (the killed rank's). Null when that is not clear: no process lists,
// every GPU emptied (the whole step died), or no GPU emptied (a data loader was killed).
const Gpu* gpu_left_by_job(const Snapshot& s) {
    const StepGpus step(s);
    const Gpu* emptied = nullptr;
    bool some_kept = false;
    for (std::size_t i = 0; i < s.gpus.size(); ++i) {
        const Gpu& g = s.gpus[i];
        if (!step[i] || !g.processes) continue;
        const bool ours = std::any_of(g.processes->begin(), g.processes->end(), [](const GpuProcess& p) {
            return p.owner == "step" || p.owner == "job";
        });
        if (ours)
            some_kept = true;
        else if (!emptied)
            emptied = &g;
    }
    return some_kept ? emptied : nullptr;
}

}  // namespace

bool job_oom_known(const Snapshot& s) {
    return s.job_cgroup && s.job_cgroup->memory_oom_kill_events.has_value();
}

bool job_pressure_known(const Snapshot& s) {
    return s.job_cgroup && (s.job_cgroup->psi.cpu_some_avg10 || s.job_cgroup->psi.memory_full_avg10 ||
                            s.job_cgroup->psi.io_full_avg10);
}

void job_cgroup_rules(const RuleInput& in, Findings& out) {
    if (!in.cur.job_cgroup) return;
    const JobCgroup& c = *in.cur.job_cgroup;
    pressure(in, c, out);
    if (c.memory_current_bytes && c.memory_max_bytes && *c.memory_max_bytes > 0) {
        const double pct =
            static_cast<double>(*c.memory_current_bytes) / static_cast<double>(*c.memory_max_bytes) * 100;
        if (pct >= kJobMemoryNearLimitPct) {
            Evidence ev = job_evidence(c);
            ev["memory_current_bytes"] = static_cast<double>(*c.memory_current_bytes);
            ev["memory_max_bytes"] = static_cast<double>(*c.memory_max_bytes);
            ev["threshold_pct"] = kJobMemoryNearLimitPct;
            out.push_back(make_finding(rule::kJobMemoryNearLimit, Severity::kWarning, "job",
                                       SubjectKind::kHost,
                                       job_name(c) + ": " + fmt_num(pct) +
                                           " % of its memory limit in use (page cache included) — the next "
                                           "allocation may be OOM-killed",
                                       std::move(ev), pct / kJobMemoryNearLimitPct, Hint::kMemory));
        }
    }
    if (!in.rates) return;
    const DeltaTable& table = in.rates->host;
    if (auto oom = delta_of(*in.rates, table, "job_cgroup", "memory_oom_kill_events");
        oom && oom->delta > 0) {
        Evidence ev = job_evidence(c);
        ev["oom_kills_delta"] = static_cast<double>(oom->delta);
        if (c.memory_max_bytes) ev["memory_max_bytes"] = static_cast<double>(*c.memory_max_bytes);
        std::string what = " — a rank or data loader may be gone";
        if (const Gpu* gone = gpu_left_by_job(in.cur)) {
            // The verdict's worst_gpu follows this (verdict.cc): the GPU whose rank died, not the first of
            // the ranks that then hang waiting for it.
            what = " — the rank on " + gpu_name(*gone) + " is gone (no process of the job left on it)";
            ev["gpu"] = gpu_name(*gone);
            ev["gpu_uuid"] = gpu_key(*gone);
        }
        out.push_back(make_finding(rule::kJobOomKill, Severity::kCritical, "job", SubjectKind::kHost,
                                   job_name(c) + ": " + std::to_string(oom->delta) +
                                       " of its processes OOM-killed at the job's memory limit" + what,
                                   std::move(ev), 2 + static_cast<double>(oom->delta), Hint::kMemory));
    }
    const auto periods = delta_of(*in.rates, table, "job_cgroup", "cpu_nr_periods");
    const auto throttled = delta_of(*in.rates, table, "job_cgroup", "cpu_nr_throttled");
    if (periods && throttled && static_cast<double>(periods->delta) >= kJobThrottledMinPeriods) {
        const double share = static_cast<double>(throttled->delta) / static_cast<double>(periods->delta);
        if (share >= kJobThrottledPeriodsShare) {
            Evidence ev = job_evidence(c);
            ev["throttled_periods_share"] = share;
            ev["threshold_share"] = kJobThrottledPeriodsShare;
            if (auto t = delta_of(*in.rates, table, "job_cgroup", "cpu_throttled_usec"))
                ev["throttled_seconds_per_second"] = t->per_second / 1e6;
            out.push_back(make_finding(rule::kJobCpuThrottled, Severity::kWarning, "job", SubjectKind::kHost,
                                       job_name(c) + ": CPU-throttled in " + fmt_num(share * 100) +
                                           " % of its scheduler periods (threshold " +
                                           fmt_num(kJobThrottledPeriodsShare * 100) +
                                           " %) — its CPU limit starves data loading and the launch path",
                                       std::move(ev), share / kJobThrottledPeriodsShare, Hint::kInput));
        }
    }
}

}  // namespace stallscope
