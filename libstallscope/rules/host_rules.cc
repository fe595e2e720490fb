#include "libstallscope/rules/host_rules.h"

#include <algorithm>
#include <cctype>
#include <span>

#include "libstallscope/rules/cgroup_rules.h"

namespace stallscope {

void host_pressure_rule(const RuleInput& in, Findings& out) {
    if (job_pressure_known(in.cur)) return;  // issue 15: the job's own PSI decides (job_*_pressure)
    const Psi& psi = in.cur.host_stats.psi;
    struct Check {
        const Gauge& value;
        double threshold;
        const RuleDescriptor& rule;
        const char* what;
        Hint hint;
    };
    const Check checks[] = {
        {psi.memory_full_avg10, in.t.psi_memory_full_pct, rule::kHostMemoryPressure,
         "of the time all tasks stalled on memory (PSI memory full avg10) — reclaim/swap is slowing the step",
         Hint::kMemory},
        {psi.io_full_avg10, in.t.psi_io_full_pct, rule::kHostIoPressure,
         "of the time all tasks stalled on I/O (PSI io full avg10) — input pipeline or checkpoint I/O bound",
         Hint::kNone},
        {psi.cpu_some_avg10, in.t.psi_cpu_some_pct, rule::kHostCpuPressure,
         "of the time runnable tasks waited for a CPU (PSI cpu some avg10) — data loaders starved of CPU",
         Hint::kNone},
    };
    for (const auto& c : checks) {
        if (!c.value || *c.value < c.threshold || *c.value <= 0) continue;
        // Pressure lasts as long as the job's memory or I/O need does: written into a kept slot.
        Finding& f = out.add(c.rule, Severity::kWarning, SubjectKind::kHost,
                             *c.value / std::max(c.threshold, 1e-9), c.hint);
        f.reason.subject.assign("host");
        append_parts(f.reason.message, "host: ", fmt_num(*c.value), " % ", c.what, " (threshold ",
                     fmt_num(c.threshold), " %)");
        f.reason.evidence["avg10_pct"] = *c.value;
        f.reason.evidence["threshold_pct"] = c.threshold;
    }
}

void host_memory_low_rule(const RuleInput& in, Findings& out) {
    const HostStats& h = in.cur.host_stats;
    if (!h.mem_available_bytes || !h.mem_total_bytes || *h.mem_total_bytes == 0) return;
    const double pct =
        static_cast<double>(*h.mem_available_bytes) / static_cast<double>(*h.mem_total_bytes) * 100;
    if (pct > in.t.mem_available_low_pct) return;
    Finding& f = out.add(rule::kHostMemoryLow, Severity::kWarning, SubjectKind::kHost,
                         in.t.mem_available_low_pct / std::max(pct, 0.1), Hint::kMemory);
    f.reason.subject.assign("host");
    append_parts(f.reason.message, "host: only ", fmt_num(pct), " % of memory available (threshold ",
                 fmt_num(in.t.mem_available_low_pct), " %) — OOM kills are next");
    Evidence& ev = f.reason.evidence;
    ev["mem_available_pct"] = pct;
    ev["mem_available_bytes"] = static_cast<double>(*h.mem_available_bytes);
    ev["threshold_pct"] = in.t.mem_available_low_pct;
}

void host_oom_rule(const RuleInput& in, Findings& out) {
    if (!in.rates || job_oom_known(in.cur)) return;  // issue 15: the job's own count decides (job_oom_kill)
    const auto d = delta_of(host_row(in), "oom_kills");
    if (!d || d->delta == 0) return;
    out.push_back(
        make_finding(rule::kHostOomKill, Severity::kCritical, "host", SubjectKind::kHost,
                     "host: " + std::to_string(d->delta) +
                         " process(es) OOM-killed during the step — a rank or data loader may be gone",
                     Evidence{{"oom_kills_delta", static_cast<double>(d->delta)}},
                     2 + static_cast<double>(d->delta), Hint::kMemory));
}

void BlockedProcessesRule::evaluate(const RuleInput& in, Findings& out) {
    const auto& blocked = in.cur.host_stats.procs_blocked;
    if (!blocked || static_cast<double>(*blocked) < in.t.procs_blocked_max || *blocked == 0) {
        run_ = 0;
        return;
    }
    if (run_++ == 0) since_ = in.cur.time;
    if (run_ < static_cast<int>(in.t.procs_blocked_min_samples)) return;
    Finding& f = out.add(rule::kHostBlockedProcesses, Severity::kWarning, SubjectKind::kHost,
                         static_cast<double>(*blocked) / std::max(in.t.procs_blocked_max, 1.0));
    f.reason.subject.assign("host");
    append_parts(f.reason.message, "host: ", std::to_string(*blocked),
                 " processes in uninterruptible sleep (D state) for ", std::to_string(run_),
                 " samples (threshold ", fmt_num(in.t.procs_blocked_max),
                 ") — a filesystem or device is hanging");
    Evidence& ev = f.reason.evidence;
    ev["procs_blocked"] = static_cast<double>(*blocked);
    ev["samples"] = static_cast<double>(run_);
    ev["threshold"] = in.t.procs_blocked_max;
    f.since = since_;
}

void collector_failure_rule(const RuleInput& in, Findings& out) {
    for (const auto& [name, why] : in.cur.collector_failures) {
        out.push_back(make_finding(rule::kCollectorFailed, Severity::kWarning, name, SubjectKind::kOther,
                                   "collector " + name + " failed: " + why +
                                       " — its counters are missing from this sample, so no verdict on them",
                                   Evidence{{"collector", name}, {"error", why}}, 1));
    }
}

std::size_t allocated_gpus(const Snapshot& s) {
    const std::size_t scheduled =
        !s.context.gpus.empty() ? s.context.gpus.size() : s.context.visible_devices.size();
    return std::max(scheduled, s.gpus.size());
}

// Policy (rules/README.md, "What is UNKNOWN"): a GPU is measured when NVML gave its utilization or GPM
// its SM activity. GPM is the better of the two (a spinning kernel reads 100 % utilization), and on a MIG
// slice it is the only one NVML has: without it a healthy MIG job could be SLOW from GPM but never FAST.
bool gpu_measured(const Gpu& g) {
    return g.utilization_pct.has_value() || (g.gpm && g.gpm->sm_active_pct.has_value());
}

std::size_t measured_gpus(const Snapshot& s) {
    return static_cast<std::size_t>(std::count_if(s.gpus.begin(), s.gpus.end(), gpu_measured));
}

namespace {

// Whether `text` holds `needle` (lowercase ASCII) in any case, without a lowered copy of `text`.
bool contains_any_case(std::string_view text, std::string_view needle) {
    return std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char c, char n) {
               return std::tolower(static_cast<unsigned char>(c)) == n;
           }) != text.end();
}

}  // namespace

void gpu_telemetry_rule(const RuleInput& in, Findings& out) {
    const std::size_t allocated = allocated_gpus(in.cur), measured = measured_gpus(in.cur);
    if (measured >= allocated) return;
    const bool none = measured == 0;
    // A node whose driver or NVML is missing misses its GPUs in every sample: written into a kept slot.
    Finding& f = out.add(rule::kGpuTelemetryMissing, none ? Label::kUnknown : Label::kFast,
                         Severity::kWarning, SubjectKind::kOther, 1);
    f.reason.subject.assign("gpus");
    std::string& m = f.reason.message;
    append_parts(m, "GPUs measured: ", std::to_string(measured), " of ", std::to_string(allocated),
                 " allocated — ");
    const std::size_t what = m.size();  // what is missing, then why
    const std::size_t unseen = allocated - in.cur.gpus.size();
    if (unseen > 0)
        append_parts(m, std::to_string(unseen), " allocated GPU(s) not visible to the GPU collector");
    Evidence& ev = f.reason.evidence;
    ev["gpus_allocated"] = static_cast<double>(allocated);
    ev["gpus_seen"] = static_cast<double>(in.cur.gpus.size());
    ev["gpus_measured"] = static_cast<double>(measured);
    std::size_t unmeasured = 0;  // where the names of the GPUs seen without a utilization value start
    for (const auto& g : in.cur.gpus) {
        if (gpu_measured(g)) continue;
        if (unmeasured == 0) {
            append_parts(m, m.size() > what ? "; " : "", "no utilization for ");
            unmeasured = m.size();
        } else {
            m += ", ";
        }
        m += gpu_name(g);
    }
    if (unmeasured > 0) ev["unmeasured_gpus"] = m.substr(unmeasured);
    // The collector's own words for why (NVML not loadable, Not Supported), when it left a warning.
    for (const auto& w : in.cur.warnings) {
        if (contains_any_case(w, "nvml") || contains_any_case(w, "gpu") || contains_any_case(w, "nvidia")) {
            ev["collector_warning"] = w.substr(0, 200);
            m += " (";
            if (w.size() > 160)
                append_parts(m, std::string_view(w).substr(0, 157), "...");
            else
                m += w;
            m += ")";
            break;
        }
    }
    m += none ? "; no verdict on the GPUs" : "; the verdict covers only the measured GPUs";
}

void StaleTelemetryRule::track(Family& f, std::uint64_t fingerprint, double now) {
    if (!f.seen) {
        f = Family{fingerprint, true, false, 0, now};
        return;
    }
    if (fingerprint != f.fingerprint) {
        f.fingerprint = fingerprint;
        f.moved = true;
        f.frozen_samples = 0;
        f.frozen_since = now;
        return;
    }
    ++f.frozen_samples;
}

void StaleTelemetryRule::evaluate(const RuleInput& in, Findings& out) {
    const double now = in.cur.time;
    auto frozen = [&](const Family& f) {
        return f.moved && f.frozen_samples >= static_cast<int>(in.t.stale_min_samples) &&
               now - f.frozen_since >= in.t.stale_seconds;
    };
    // Called only for a frozen family, so that its strings are built only when it fires.
    auto judge = [&](const std::string& name, Family& f, const std::string& subject, SubjectKind kind,
                     const std::string& what) {
        Finding finding = make_finding(
            rule::kTelemetryStale, Severity::kWarning, subject, kind,
            what + " stopped changing " + fmt_num(now - f.frozen_since) + " s ago (" +
                std::to_string(f.frozen_samples) + " samples; threshold " + fmt_num(in.t.stale_seconds) +
                " s) after moving earlier in the step — stuck collector or cached reads, not a quiet node",
            Evidence{{"family", name},
                     {"frozen_seconds", now - f.frozen_since},
                     {"frozen_samples", static_cast<double>(f.frozen_samples)},
                     {"threshold_seconds", in.t.stale_seconds}},
            1);
        finding.since = f.frozen_since;
        out.push_back(std::move(finding));
    };
    if (!in.cur.rdma.empty()) {
        // The counters themselves against the last sample's, not a hash of them: a hash chained over
        // every counter (~370 on a DGX) was a serial dependency the length of the list, where this
        // compare stops at the first counter that moved (the steady case) and copies a flat array.
        std::span<const Counter> values;
        if (in.rdma_values) {  // the same values in the same order, without a second walk of the maps
            values = *in.rdma_values;
        } else {
            rdma_walked_.clear();
            for (const auto& p : in.cur.rdma)
                for (const CounterMap* m : {&p.counters, &p.hw_counters})
                    for (const auto& [name, value] : *m) rdma_walked_.push_back(value);
            values = rdma_walked_;
        }
        if (!std::equal(values.begin(), values.end(), rdma_last_.begin(), rdma_last_.end())) {
            rdma_last_.assign(values.begin(), values.end());
            ++rdma_changes_;
        }
        Family& f = rdma_;
        track(f, rdma_changes_, now);
        if (frozen(f)) judge("rdma", f, "rdma", SubjectKind::kOther, "all RDMA port counters");
    }
    for (std::size_t i = 0; i < in.cur.gpus.size(); ++i) {
        const Gpu& g = in.cur.gpus[i];
        if (!g.energy_mj) continue;
        Family& f = gpu_energy_.at(in, i);
        track(f, *g.energy_mj, now);
        if (frozen(f))
            judge("gpu_energy", f, gpu_key(g), SubjectKind::kGpu, gpu_name(g) + ": energy counter");
    }
}

}  // namespace stallscope
