#include "libstallscope/rules/gpm_rules.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "libstallscope/rules/cgroup_rules.h"

namespace stallscope {
namespace {

struct Mean {
    double sum = 0;
    int n = 0;
    void add(const Gauge& g) {
        if (g) sum += *g, ++n;
    }
    std::optional<double> value() const { return n ? std::optional<double>(sum / n) : std::nullopt; }
};

struct GpmMeans {
    Mean sm, tensor, dram, nvlink, pcie, util;
    int gpus = 0;
};

// Means over the step's GPUs with GPM; `skip_spinning` leaves out GPUs the busy-wait rule owns.
GpmMeans gpm_means(const Snapshot& s, const Thresholds* skip_spinning = nullptr) {
    GpmMeans m;
    const StepGpus step(s);
    for (std::size_t i = 0; i < s.gpus.size(); ++i) {
        const Gpu& g = s.gpus[i];
        if (!g.gpm || !step[i]) continue;
        if (skip_spinning && gpm_spinning(g, *skip_spinning).value_or(false)) continue;
        ++m.gpus;
        m.sm.add(g.gpm->sm_active_pct);
        m.tensor.add(g.gpm->tensor_active_pct);
        m.dram.add(g.gpm->dram_bandwidth_pct);
        if (g.gpm->nvlink_tx_mib_per_s && g.gpm->nvlink_rx_mib_per_s)
            m.nvlink.add(*g.gpm->nvlink_tx_mib_per_s + *g.gpm->nvlink_rx_mib_per_s);
        if (g.gpm->pcie_tx_mib_per_s && g.gpm->pcie_rx_mib_per_s)
            m.pcie.add(*g.gpm->pcie_tx_mib_per_s + *g.gpm->pcie_rx_mib_per_s);
        m.util.add(g.utilization_pct);
    }
    return m;
}

// The job's CPU limit throttled it this interval (cgroup cpu.stat deltas).
bool job_throttled(const Rates* rates) {
    if (!rates) return false;
    const auto periods = delta_of(*rates, rates->host, "job_cgroup", "cpu_nr_periods");
    const auto throttled = delta_of(*rates, rates->host, "job_cgroup", "cpu_nr_throttled");
    return periods && throttled && static_cast<double>(periods->delta) >= kJobThrottledMinPeriods &&
           static_cast<double>(throttled->delta) >=
               kJobThrottledPeriodsShare * static_cast<double>(periods->delta);
}

// The job's own pressure where its cgroup has PSI, else the node's (context only).
bool input_pressure(const Snapshot& s) {
    const Psi& psi = s.job_cgroup && s.job_cgroup->psi.cpu_some_avg10 ? s.job_cgroup->psi : s.host_stats.psi;
    return (psi.cpu_some_avg10 && *psi.cpu_some_avg10 >= kHintInputPressurePct) ||
           (psi.io_full_avg10 && *psi.io_full_avg10 >= kHintInputPressurePct) ||
           (psi.io_some_avg10 && *psi.io_some_avg10 >= 2 * kHintInputPressurePct);
}

}  // namespace

std::optional<bool> gpm_spinning(const Gpu& g, const Thresholds& t) {
    if (!g.gpm || !g.gpm->sm_active_pct) return std::nullopt;
    const GpmMetrics& m = *g.gpm;
    const bool no_work = *m.sm_active_pct <= kSpinSmActiveMaxPct &&
                         m.tensor_active_pct.value_or(0) <= kSpinTensorMaxPct &&
                         m.dram_bandwidth_pct.value_or(0) <= kSpinDramMaxPct;
    if (g.utilization_pct) return *g.utilization_pct >= t.hang_util_pct && no_work;
    return no_work && *m.sm_active_pct > t.gpu_idle_util_pct;  // MIG: something runs, doing nothing
}

std::optional<double> gpm_sm_active(const Gpu& g) {
    if (g.gpm && g.gpm->sm_active_pct) return g.gpm->sm_active_pct;
    return std::nullopt;
}

std::optional<std::string> gpm_bottleneck_hint(const Snapshot& s, const Rates* rates) {
    const GpmMeans m = gpm_means(s);
    const auto sm = m.sm.value();
    if (!sm) return std::nullopt;
    const double dram = m.dram.value().value_or(0);
    if (*sm >= kHintComputeSmPct) return std::string(dram >= kHintMemoryDramPct ? "memory" : "compute");
    if (m.nvlink.value().value_or(0) >= kHintNvlinkMibPerS || m.pcie.value().value_or(0) >= kHintPcieMibPerS)
        return std::string("network");
    if (input_pressure(s) || job_throttled(rates)) return std::string("input");
    if (dram >= kHintMemoryDramPct) return std::string("memory");
    return std::nullopt;
}

namespace {

// Whether CUDA_VISIBLE_DEVICES or the step's gres indices name `gpu` (by uuid, MIG parent uuid, index).
bool listed_for_step(const Gpu& gpu, const Snapshot& s) {
    char digits[16];
    const std::string_view index(
        digits,
        static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, gpu.index).ptr - digits));
    const auto names = [&](std::string_view entry) {
        if (entry == gpu.uuid) return true;
        if (gpu.mig) {
            const std::string_view parent = gpu.mig->parent_uuid;
            return entry == parent || (entry.starts_with("MIG-") && entry.substr(4) == parent);
        }
        return entry == index;
    };
    return std::any_of(s.context.visible_devices.begin(), s.context.visible_devices.end(), names) ||
           std::any_of(s.context.gpus.begin(), s.context.gpus.end(),
                       [&](const std::string& e) { return e == index; });
}

}  // namespace

StepGpus::StepGpus(const Snapshot& s) : s_(s) {
    every_ = (s.context.visible_devices.empty() && s.context.gpus.empty()) ||
             std::none_of(s.gpus.begin(), s.gpus.end(), [&](const Gpu& g) { return listed_for_step(g, s); });
}

bool StepGpus::operator[](std::size_t i) const {
    return every_ || listed_for_step(s_.gpus[i], s_);
}

void gpu_low_sm_activity_rule(const RuleInput& in, Findings& out) {
    const GpmMeans m = gpm_means(in.cur, &in.t);
    const auto sm = m.sm.value();
    if (!sm || *sm >= kLowSmActivityPct || *sm <= in.t.gpu_idle_util_pct) return;  // idle is gpu_idle's
    const auto util = m.util.value();
    if (util && *util < kLowSmBusyUtilPct) return;  // low utilization already says it (gpu_low_utilization)
    const auto hint = gpm_bottleneck_hint(in.cur, in.rates);
    Evidence ev{{"mean_sm_active_pct", *sm},
                {"gpus", static_cast<double>(m.gpus)},
                {"threshold_pct", kLowSmActivityPct}};
    if (util) ev["mean_utilization_pct"] = *util;
    if (auto tensor = m.tensor.value()) ev["mean_tensor_active_pct"] = *tensor;
    if (auto dram = m.dram.value()) ev["mean_dram_bandwidth_pct"] = *dram;
    std::string why = hint == "network" ? "waiting on communication (NVLink/PCIe busy)"
                      : hint == "input"
                          ? "waiting on input (the job's CPU or I/O is under pressure or throttled)"
                      : hint == "memory" ? "memory-bandwidth bound"
                                         : "kernels too small, launch-bound or synchronising";
    out.push_back(make_finding(rule::kGpuLowSmActivity, Severity::kWarning, "gpus", SubjectKind::kOther,
                               "mean SM activity " + fmt_num(*sm) + " % over " + std::to_string(m.gpus) +
                                   " GPU(s)" +
                                   (util ? " while utilization reads " + fmt_num(*util) + " %"
                                         : std::string(" (MIG: no utilization)")) +
                                   " (threshold " + fmt_num(kLowSmActivityPct) + " %) — " + why,
                               std::move(ev), kLowSmActivityPct / std::max(*sm, 1.0),
                               hint ? hint_from_string(*hint).value_or(Hint::kNone) : Hint::kNone));
}

void gpu_link_error_rule(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    std::string buf;
    const StepGpus step(in.cur);
    for (std::size_t i = 0; i < in.cur.gpus.size(); ++i) {
        const Gpu& g = in.cur.gpus[i];
        if (!g.interconnect || !step[i]) continue;
        const DeltaRow* row = gpu_row(in, i);
        const std::string_view key = gpu_key_view(g, buf);
        auto delta = [&](CounterName counter) -> std::uint64_t {
            const auto d = delta_of(row, counter);
            return d ? d->delta : 0;
        };
        const std::uint64_t crc = delta("nvlink_crc_errors"), replay = delta("nvlink_replay_errors"),
                            recovery = delta("nvlink_recovery_errors"), pcie = delta("pcie_replay_count");
        if (crc + replay + recovery > 0) {
            Evidence ev = gpu_evidence(g);
            ev["nvlink_crc_errors_delta"] = static_cast<double>(crc);
            ev["nvlink_replay_errors_delta"] = static_cast<double>(replay);
            ev["nvlink_recovery_errors_delta"] = static_cast<double>(recovery);
            const bool recovered = recovery > 0;
            out.push_back(make_finding(
                rule::kGpuNvlinkErrors, recovered ? Label::kFailRisk : Label::kSlow,
                recovered ? Severity::kCritical : Severity::kWarning, std::string(key), SubjectKind::kGpu,
                gpu_name(g) + ": NVLink errors this interval (CRC " + std::to_string(crc) + ", replay " +
                    std::to_string(replay) + ", recovery " + std::to_string(recovery) + ")" +
                    (recovered
                         ? " — a link retrained; it may drop or run degraded (check nvidia-smi nvlink -s)"
                         : " — retransmissions slow every collective over this GPU's links"),
                std::move(ev), 1 + static_cast<double>(crc + replay + 10 * recovery), Hint::kNetwork));
        }
        if (pcie > 0) {
            Evidence ev = gpu_evidence(g);
            ev["pcie_replay_delta"] = static_cast<double>(pcie);
            out.push_back(make_finding(rule::kGpuPcieReplay, Severity::kWarning, std::string(key),
                                       SubjectKind::kGpu,
                                       gpu_name(g) + ": " + std::to_string(pcie) +
                                           " PCIe replay(s) this interval — link errors between host and GPU "
                                           "(riser, slot, retimer)",
                                       std::move(ev), 1 + static_cast<double>(pcie), Hint::kNetwork));
        }
    }
}

// gpu_pcie_link_degraded (fabric, SLOW): a step GPU's PCIe link runs below what the GPU supports in its
// slot: fewer lanes than its most (at any load), or a lower generation while the GPU is busy (an idle GPU
// lowers its generation to save power, which is no fault). Judged only on what NVML measured: a GPU
// without link data, or without utilization for the generation, gets no finding either way.
namespace {

constexpr double kPcieLinkBusyUtilPct = 50;

void gpu_pcie_link_rule(const RuleInput& in, Findings& out) {
    // Which GPUs are the step's is asked only of a degraded link: a healthy node pays one loop a sample
    // (replay runs this rule for every sample of a timeline).
    std::optional<StepGpus> step;
    std::string buf;
    for (std::size_t i = 0; i < in.cur.gpus.size(); ++i) {
        const Gpu& g = in.cur.gpus[i];
        if (!g.pcie_link) continue;
        const PcieLink& l = *g.pcie_link;
        const bool narrow = l.width && l.max_width && *l.width > 0 && *l.width < *l.max_width;
        const bool busy = g.utilization_pct && *g.utilization_pct >= kPcieLinkBusyUtilPct;
        const bool slow = busy && l.generation && l.max_generation && *l.generation > 0 &&
                          *l.generation < *l.max_generation;
        if (!narrow && !slow) continue;
        if (!step) step.emplace(in.cur);
        if (!(*step)[i]) continue;
        const auto text = [](const Counter& gen, const Counter& width) {
            return "Gen" + (gen ? std::to_string(*gen) : std::string("?")) + " x" +
                   (width ? std::to_string(*width) : std::string("?"));
        };
        Evidence ev = gpu_evidence(g);
        for (const auto& [name, c] : {std::pair{"pcie_link_generation", l.generation},
                                      {"pcie_link_width", l.width},
                                      {"pcie_link_max_generation", l.max_generation},
                                      {"pcie_link_max_width", l.max_width}})
            if (c) ev[name] = static_cast<double>(*c);
        // How many times the link's bandwidth would be at its most: lanes, and ~2x per generation.
        const double lanes = narrow ? static_cast<double>(*l.max_width) / static_cast<double>(*l.width) : 1;
        const double gens = slow ? std::ldexp(1.0, static_cast<int>(*l.max_generation - *l.generation)) : 1;
        out.push_back(make_finding(
            rule::kGpuPcieLinkDegraded, Severity::kWarning, std::string(gpu_key_view(g, buf)),
            SubjectKind::kGpu,
            gpu_name(g) + ": PCIe link at " + text(l.generation, l.width) + " of " +
                text(l.max_generation, l.max_width) +
                (narrow ? " — fewer lanes than the GPU supports (riser, slot, retimer or seating)"
                        : " while the GPU is busy — the link trained to a lower generation") +
                "; host-GPU copies run at a fraction of their speed",
            std::move(ev), lanes * gens, Hint::kNetwork));
    }
}

}  // namespace

void ForeignProcessRule::evaluate(const RuleInput& in, Findings& out) {
    const StepGpus step(in.cur);
    bool any = false;
    for (std::size_t i = 0; i < in.cur.gpus.size(); ++i) {
        const Gpu& g = in.cur.gpus[i];
        if (!g.processes || !step[i]) continue;
        for (const auto& p : *g.processes) {
            const bool other_job = p.owner == "other_job";
            if (!other_job && p.owner != "other_user") continue;
            any = true;
            Seen& seen = seen_[gpu_key(g) + '\x1f' + std::to_string(p.pid)];
            if (seen.first == 0) seen.first = in.cur.time;
            seen.last = in.cur.time;
            if (p.used_memory_bytes && *p.used_memory_bytes >= seen.peak_bytes) {
                seen.peak_bytes = *p.used_memory_bytes;
                seen.peak_known = true;
            }
            Evidence ev = gpu_evidence(g);
            ev["pid"] = static_cast<double>(p.pid);
            ev["owner"] = p.owner;
            if (!p.job_id.empty()) ev["job_id"] = p.job_id;
            if (p.uid) ev["uid"] = static_cast<double>(*p.uid);
            if (p.used_memory_bytes) ev["used_memory_bytes"] = static_cast<double>(*p.used_memory_bytes);
            if (seen.peak_known) ev["peak_memory_bytes"] = static_cast<double>(seen.peak_bytes);
            const double stayed = in.cur.time - seen.first;
            ev["present_seconds"] = stayed;
            const std::string who =
                other_job ? "job " + p.job_id : "uid " + (p.uid ? std::to_string(*p.uid) : std::string("?"));
            auto gib = [](std::uint64_t bytes) { return fmt_num(static_cast<double>(bytes) / (1 << 30)); };
            std::string memory;
            if (seen.peak_known && p.used_memory_bytes && *p.used_memory_bytes < seen.peak_bytes)
                memory =
                    " holding up to " + gib(seen.peak_bytes) + " GiB (now " + gib(*p.used_memory_bytes) + ")";
            else if (seen.peak_known)
                memory = " holding " + gib(seen.peak_bytes) + " GiB";
            const std::string duration = stayed > 0 ? " for " + fmt_duration(stayed) : "";
            Finding f =
                make_finding(rule::kGpuForeignProcess, Severity::kWarning, gpu_key(g), SubjectKind::kGpu,
                             gpu_name(g) + ": process " + std::to_string(p.pid) + " of " + who + memory +
                                 duration + " on this step's GPU — it competes for SMs and memory",
                             std::move(ev), 2, Hint::kCompute);
            f.refresh =
                true;  // the verdict keeps the latest: the peak and the whole stay, not the first look
            f.since = seen.first;
            out.push_back(std::move(f));
        }
    }
    // Forget processes gone for a while (pids are reused); nothing to do on a node without any.
    if (!seen_.empty() && (!any || seen_.size() > 64))
        std::erase_if(seen_, [&](const auto& e) { return in.cur.time - e.second.last > 600; });
}

void gpu_depth_rules(const RuleInput& in, Findings& out) {
    gpu_low_sm_activity_rule(in, out);
    gpu_link_error_rule(in, out);
    gpu_pcie_link_rule(in, out);
}

}  // namespace stallscope
