#include "libstallscope/rules/gpu_window_rules.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "libstallscope/rules/gpm_rules.h"  // issue 15

namespace stallscope {
namespace {

std::string normalized(const std::string& name) {
    std::string s;
    for (char c : name)
        s += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
    return s;
}

// The median of `sorted` less one element equal to `left_out` (all of it when there is none such): each
// GPU's peer median from one sort of every busy GPU's values, the same numbers as sorting the peers'.
double median_without(const std::vector<double>& sorted, const std::optional<double>& left_out) {
    std::size_t skip = sorted.size();
    if (left_out) {
        const auto it = std::lower_bound(sorted.begin(), sorted.end(), *left_out);
        if (it != sorted.end() && *it == *left_out) skip = static_cast<std::size_t>(it - sorted.begin());
    }
    const std::size_t n = sorted.size() - (skip < sorted.size() ? 1 : 0);
    if (n == 0) return 0;
    const auto at = [&](std::size_t i) { return sorted[i < skip ? i : i + 1]; };
    return n % 2 ? at(n / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
}

// A GPU's index and uuid (no bus id: these rules' evidence has always named GPUs so).
void add_gpu_ids(const Gpu& g, Evidence& ev) {
    ev.reserve(kEvidenceEntries);
    ev["gpu_index"] = static_cast<double>(g.index);
    if (!g.uuid.empty()) ev["uuid"] = g.uuid;
}

std::string join_names(const std::vector<const Gpu*>& gpus) {
    std::string s;
    for (const Gpu* g : gpus) s += (s.empty() ? "" : ", ") + gpu_name(*g);
    return s;
}

// Whether any of `busy` could be a straggler, from the spread alone: a peer median lies between the
// lowest and highest value, so a utilization gap is at most max - min, and a power gap at most
// 1 - min / max (powers all > 0). Rounding keeps both bounds (each step is monotonic). A healthy node
// stops here, before the sorts and medians below (6 % of a dgx-h100 replay whose GPUs all ran).
// False only when neither gap can reach its threshold; a NaN answers true (the full comparison decides).
bool peers_can_straggle(const std::vector<const Gpu*>& busy, const Thresholds& t) {
    double util_min = *busy.front()->utilization_pct, util_max = util_min;
    double power_min = 0, power_max = 0;
    bool power_seen = false;
    for (const Gpu* g : busy) {
        if (std::isnan(*g->utilization_pct) || (g->power_w && std::isnan(*g->power_w))) return true;
        util_min = std::min(util_min, *g->utilization_pct);
        util_max = std::max(util_max, *g->utilization_pct);
        if (!g->power_w) continue;
        power_min = power_seen ? std::min(power_min, *g->power_w) : *g->power_w;
        power_max = power_seen ? std::max(power_max, *g->power_w) : *g->power_w;
        power_seen = true;
    }
    const bool util_gap_below = util_max - util_min < t.straggler_util_gap_pct;
    const bool power_gap_below =
        !power_seen || (power_min > 0 && 1 - power_min / power_max < t.straggler_power_gap_frac);
    return !(util_gap_below && power_gap_below);
}

}  // namespace

unsigned hw_slowdown_bits(const Gpu& gpu) {
    if (gpu.throttle_reasons_mask) return static_cast<unsigned>(*gpu.throttle_reasons_mask) & 0xC8u;
    unsigned bits = 0;
    for (const auto& raw : gpu.throttle_reasons) {
        const std::string n = normalized(raw);
        if (n.find("power_brake") != std::string::npos)
            bits |= kHwPowerBrake;
        else if (n.find("hw_thermal") != std::string::npos)
            bits |= kHwThermal;
        else if (n.find("hw_slowdown") != std::string::npos)
            bits |= kHwSlowdown;
    }
    return bits;
}

namespace {

struct HwSlowdownKind {
    unsigned bit;
    const RuleDescriptor& rule;
    const char* what;
};
const HwSlowdownKind kHwSlowdownKinds[] = {
    {kHwPowerBrake, rule::kGpuPowerBrake,
     "HW power brake (external power-brake signal: PSU/board power event)"},
    {kHwThermal, rule::kGpuHwThermalSlowdown, "HW thermal slowdown"},
    {kHwSlowdown, rule::kGpuHwSlowdown, "HW slowdown (thermal or power protection)"},
};
constexpr std::size_t kHwSlowdownKindCount = sizeof kHwSlowdownKinds / sizeof kHwSlowdownKinds[0];

const HwSlowdownKind& kind_of(const LateDetails& d) {
    return kHwSlowdownKinds[d.kind];
}

// "of the last 600 s" once the window is full; before that, what was observed ("of the 40 s observed").
void append_window_words(std::string& message, const LateDetails& d) {
    const double total = d.window_seconds;
    if (total + 1e-6 >= d.window_setting)
        append_parts(message, "the last ", fmt_num(total), " s");
    else
        append_parts(message, "the ", fmt_num(total), " s observed");
}

// Every GPU of the node: one node-wide condition (a power brake is a board/PSU signal), one reason.
void write_node_wide_hw_slowdown(const LateDetails& d, Reason& r) {
    std::string& m = r.message;
    append_parts(m, "all ", std::to_string(static_cast<long>(d.gpus_affected)), " GPUs: ", kind_of(d).what,
                 " in >= ", fmt_num(d.share * 100), " % of ");
    append_window_words(m, d);
    append_parts(m, " (threshold ", fmt_num(d.threshold_share * 100),
                 " %) — node-wide, clocks forced down on every GPU; needs hardware inspection");
    Evidence& ev = r.evidence;
    ev["gpus_affected"] = static_cast<double>(d.gpus_affected);
    ev["gpus_total"] = static_cast<double>(d.gpus_total);
    ev["min_share"] = d.share;
    ev["window_seconds"] = d.window_seconds;
    ev["threshold_share"] = d.threshold_share;
}

void write_gpu_hw_slowdown(const LateDetails& d, Reason& r) {
    std::string& m = r.message;
    append_parts(m, d.gpu_name, ": ", kind_of(d).what, " in ", fmt_num(d.share * 100), " % of ");
    append_window_words(m, d);
    append_parts(m, " (threshold ", fmt_num(d.threshold_share * 100),
                 " %) — clocks forced down, needs hardware inspection");
    Evidence& ev = r.evidence;
    ev.reserve(kEvidenceEntries);  // add_gpu_ids, from the details
    ev["gpu_index"] = static_cast<double>(d.gpu_index);
    if (!d.gpu_uuid.empty()) ev["uuid"] = d.gpu_uuid;
    ev["share"] = d.share;
    ev["window_seconds"] = d.window_seconds;
    ev["threshold_share"] = d.threshold_share;
    if (d.sm_clock_mhz) ev["sm_clock_mhz"] = static_cast<double>(*d.sm_clock_mhz);
    if (d.power_w) ev["power_w"] = *d.power_w;
}

// Written now when the verdict wants them, else left in f.late for the verdict to write when it is built.
void write_or_defer(Findings& out, Finding& f) {
    if (!out.details_wanted(f)) return;
    f.late.write(f.late, f.reason);
    f.late.write = nullptr;
}

}  // namespace

void HwSlowdownRule::evaluate(const RuleInput& in, Findings& out) {
    const double now = in.cur.time;
    const double dt = last_time_ >= 0 && now > last_time_ ? now - last_time_ : 0;
    last_time_ = now;
    const auto& kinds = kHwSlowdownKinds;
    constexpr std::size_t kKinds = kHwSlowdownKindCount;
    static_assert(kKinds == sizeof(Window::set) / sizeof(double));
    // The sums in locals while the window moves (the deque's writes could alias them in memory, so every
    // add was a store and a reload), written back once: the same additions in the same order.
    double sum_total = 0, sum_set[kKinds] = {};
    auto account = [&](const Sample& s, double sign) {
        sum_total += sign * s.dt;
        for (std::size_t i = 0; i < kKinds; ++i)
            if (s.bits & kinds[i].bit) sum_set[i] += sign * s.dt;
    };
    static_assert(kKinds == sizeof hits_ / sizeof hits_[0]);
    std::vector<Hit>* hits = hits_;
    for (auto& h : hits_) h.clear();
    for (std::size_t gi = 0; gi < in.cur.gpus.size(); ++gi) {
        const Gpu& g = in.cur.gpus[gi];
        Window& w = history_.at(in, gi);
        sum_total = w.total;
        std::copy(std::begin(w.set), std::end(w.set), sum_set);
        const Sample added{now, dt, hw_slowdown_bits(g)};
        w.samples.push_back(added);
        account(added, +1);
        while (!w.samples.empty() && w.samples.front().time <= now - in.t.hw_slowdown_window_seconds) {
            account(w.samples.front(), -1);
            w.samples.pop_front();
        }
        w.total = sum_total;
        std::copy(std::begin(sum_set), std::end(sum_set), w.set);
        if (w.samples.empty()) w = Window{};  // no drift left behind by the subtractions
        const double total = w.total;
        if (total <= 1e-9) continue;
        for (std::size_t i = 0; i < kKinds; ++i) {
            const double set = w.set[i];
            const double share = set / total;
            if (set <= 1e-9 || share < in.t.hw_slowdown_min_share) continue;
            double since = 0;  // only scanned when the rule fires
            for (const auto& s : w.samples)
                if (s.bits & kinds[i].bit) {
                    since = s.time;
                    break;
                }
            hits[i].push_back({&g, share, total, since});
        }
    }
    for (std::size_t i = 0; i < kKinds; ++i) {
        const HwSlowdownKind& k = kinds[i];
        const auto& h = hits[i];
        if (h.empty()) continue;
        if (h.size() >= 2 && h.size() == in.cur.gpus.size()) {
            double share = 1, total = 0, since = h.front().since;
            for (const Hit& x : h) {
                share = std::min(share, x.share);
                total = std::max(total, x.total);
                since = std::min(since, x.since);
            }
            Finding& f = out.add(k.rule, Severity::kWarning, SubjectKind::kOther,
                                 share / std::max(in.t.hw_slowdown_min_share, 1e-9), Hint::kCompute);
            f.reason.subject.assign("gpus");
            f.since = since;
            f.refresh = true;
            LateDetails& d = f.late;
            d.kind = i;
            d.share = share;
            d.window_seconds = total;
            d.window_setting = in.t.hw_slowdown_window_seconds;
            d.threshold_share = in.t.hw_slowdown_min_share;
            d.gpus_affected = h.size();
            d.gpus_total = in.cur.gpus.size();
            d.write = &write_node_wide_hw_slowdown;
            write_or_defer(out, f);
            continue;
        }
        for (const Hit& x : h) {
            const Gpu& g = *x.gpu;
            // A throttled GPU is throttled all day: written into a kept slot (Findings::add).
            Finding& f = out.add(k.rule, Severity::kWarning, SubjectKind::kGpu,
                                 x.share / std::max(in.t.hw_slowdown_min_share, 1e-9), Hint::kCompute);
            gpu_key_into(g, f.reason.subject);
            f.since = x.since;
            f.refresh = true;
            LateDetails& d = f.late;
            d.kind = i;
            d.share = x.share;
            d.window_seconds = x.total;
            d.window_setting = in.t.hw_slowdown_window_seconds;
            d.threshold_share = in.t.hw_slowdown_min_share;
            d.gpu_index = g.index;
            d.sm_clock_mhz = g.sm_clock_mhz;
            d.power_w = g.power_w;
            gpu_name_into(g, d.gpu_name);
            assign_if_other(d.gpu_uuid, g.uuid);
            d.write = &write_gpu_hw_slowdown;
            write_or_defer(out, f);
        }
    }
}

void ThermalThrottleRule::evaluate(const RuleInput& in, Findings& out) {
    for (std::size_t i = 0; i < in.cur.gpus.size(); ++i) {
        const Gpu& g = in.cur.gpus[i];
        if (!g.sm_clock_mhz || !g.temperature_c) continue;
        const double clock = static_cast<double>(*g.sm_clock_mhz), temp = *g.temperature_c;
        const bool busy = !g.utilization_pct || *g.utilization_pct >= in.t.gpu_util_low_pct;
        Peak& p = peaks_.at(in, i);
        if (!busy) continue;
        if (clock >= p.clock) {
            p = Peak{clock, temp, 0};
            continue;
        }
        const double drop_pct = (p.clock - clock) / p.clock * 100;
        const double rise = temp - p.temp;
        if (drop_pct < in.t.thermal_clock_drop_pct || rise < in.t.thermal_temp_rise_c) continue;
        if (p.since == 0) p.since = in.cur.time;
        Finding& f = out.add(rule::kGpuThermalThrottle, Severity::kWarning, SubjectKind::kGpu,
                             drop_pct / std::max(in.t.thermal_clock_drop_pct, 1e-9), Hint::kCompute);
        gpu_key_into(g, f.reason.subject);
        f.since = p.since;
        if (!out.details_wanted(f)) continue;
        append_parts(f.reason.message, gpu_name(g), ": SM clock ", fmt_num(clock), " MHz, ",
                     fmt_num(drop_pct), " % below its peak of ", fmt_num(p.clock),
                     " MHz, while temperature rose ", fmt_num(p.temp), " → ", fmt_num(temp),
                     " °C — thermal throttling");
        Evidence& ev = f.reason.evidence;
        add_gpu_ids(g, ev);
        ev["sm_clock_mhz"] = clock;
        ev["peak_sm_clock_mhz"] = p.clock;
        ev["clock_drop_pct"] = drop_pct;
        ev["temperature_c"] = temp;
        ev["temperature_at_peak_c"] = p.temp;
        ev["clock_drop_threshold_pct"] = in.t.thermal_clock_drop_pct;
        ev["temp_rise_threshold_c"] = in.t.thermal_temp_rise_c;
        if (!g.throttle_reasons.empty()) {
            std::string names;
            for (const auto& n : g.throttle_reasons) names += (names.empty() ? "" : ",") + n;
            ev["throttle_reasons"] = names;
        }
    }
}

void BusyWaitHangRule::evaluate(const RuleInput& in, Findings& out) {
    std::vector<const Gpu*> hung;
    double since = 0, worst_frac = 0;
    for (std::size_t i = 0; i < in.cur.gpus.size(); ++i) {
        const Gpu& g = in.cur.gpus[i];
        Run& run = runs_.at(in, i);
        // issue 15: GPM (SM/tensor/DRAM activity) decides where present; utilization + power otherwise.
        const std::optional<bool> gpm_spin = gpm_spinning(g, in.t);
        const bool spinning = gpm_spin
                                  ? *gpm_spin
                                  : g.utilization_pct && g.power_w && g.power_limit_w &&
                                        *g.power_limit_w > 0 && *g.utilization_pct >= in.t.hang_util_pct &&
                                        *g.power_w <= in.t.hang_power_max_frac * *g.power_limit_w;
        if (!spinning) {
            run = Run{};
            continue;
        }
        if (run.samples++ == 0) run.since = in.cur.time;
        if (run.samples < static_cast<int>(in.t.hang_min_samples)) continue;
        hung.push_back(&g);
        since = since == 0 ? run.since : std::min(since, run.since);
        if (g.power_w && g.power_limit_w && *g.power_limit_w > 0)
            worst_frac = std::max(worst_frac, *g.power_w / *g.power_limit_w);
    }
    if (hung.empty()) return;
    const Gpu& first = *hung.front();
    // issue 15: with GPM the decision (and its evidence) is SM activity; a MIG slice has no utilization.
    const bool by_gpm = gpm_sm_active(first).has_value();
    Finding& f = out.add(rule::kGpuBusyWaitHang, Severity::kCritical, SubjectKind::kGpu, 3);
    gpu_key_into(first, f.reason.subject);
    f.since = since;
    if (!out.details_wanted(f)) return;
    std::string& m = f.reason.message;
    append_parts(m, std::to_string(hung.size()), " of ", std::to_string(in.cur.gpus.size()), " GPU(s) (",
                 join_names(hung), ") ");
    if (by_gpm)
        append_parts(m, "running kernels with <= ", fmt_num(*gpm_sm_active(first)),
                     " % SM activity and no tensor or DRAM work (GPM)");
    else
        append_parts(m, "at >= ", fmt_num(in.t.hang_util_pct),
                     " % utilization but drawing <= ", fmt_num(worst_frac * 100), " % of the power limit");
    append_parts(m, " for >= ", fmt_num(in.t.hang_min_samples),
                 " samples — kernels spin-waiting (a collective waiting on a dead or stuck peer?)");
    Evidence& ev = f.reason.evidence;
    add_gpu_ids(first, ev);
    ev["gpus_hung"] = static_cast<double>(hung.size());
    ev["gpus_total"] = static_cast<double>(in.cur.gpus.size());
    ev["hung_gpus"] = join_names(hung);
    if (first.utilization_pct) ev["utilization_pct"] = *first.utilization_pct;
    if (by_gpm) ev["sm_active_pct"] = *gpm_sm_active(first);
    if (first.power_w) ev["power_w"] = *first.power_w;
    if (first.power_limit_w) ev["power_limit_w"] = *first.power_limit_w;
    ev["max_power_fraction"] = worst_frac;
    ev["power_threshold_fraction"] = in.t.hang_power_max_frac;
    ev["samples_threshold"] = in.t.hang_min_samples;
}

void IdleGpuRule::evaluate(const RuleInput& in, Findings& out) {
    std::vector<const Gpu*> idle;
    double since = 0;
    int known = 0;
    std::string buf;
    for (const auto& g : in.cur.gpus) {
        // issue 15: idle is decided on SM activity where GPM measured it (a MIG slice has no
        // utilization: unknown, not idle); a GPU spinning at full utilization is the hang rule's.
        const std::optional<double> activity = gpm_sm_active(g) ? gpm_sm_active(g) : g.utilization_pct;
        if (!activity) continue;
        ++known;
        const std::string_view key = gpu_key_view(g, buf);
        auto it = idle_since_.find(key);
        if (*activity > in.t.gpu_idle_util_pct ||
            (g.utilization_pct && *g.utilization_pct >= in.t.hang_util_pct)) {
            if (it != idle_since_.end()) idle_since_.erase(it);
            continue;
        }
        if (it == idle_since_.end()) it = idle_since_.emplace(std::string(key), in.cur.time).first;
        const double start = it->second;
        if (in.cur.time - start < in.t.gpu_idle_window_seconds) continue;
        idle.push_back(&g);
        since = since == 0 ? start : std::min(since, start);
    }
    if (idle.empty()) return;
    const char* metric = gpm_sm_active(*idle.front()) ? " % SM activity, GPM) for " : " % utilization) for ";
    Finding& f = out.add(rule::kGpuIdle, Severity::kWarning, SubjectKind::kGpu,
                         static_cast<double>(known) / std::max<size_t>(known - idle.size(), 1));
    gpu_key_into(*idle.front(), f.reason.subject);
    f.since = since;
    if (!out.details_wanted(f)) return;
    append_parts(f.reason.message, std::to_string(idle.size()), " of ", std::to_string(known),
                 " allocated GPU(s) idle (<= ", fmt_num(in.t.gpu_idle_util_pct), metric,
                 fmt_num(in.cur.time - since), " s: ", join_names(idle), " — the step does not use them");
    Evidence& ev = f.reason.evidence;
    add_gpu_ids(*idle.front(), ev);
    ev["gpus_idle"] = static_cast<double>(idle.size());
    ev["gpus_total"] = static_cast<double>(known);
    ev["idle_gpus"] = join_names(idle);
    ev["idle_seconds"] = in.cur.time - since;
    ev["threshold_pct"] = in.t.gpu_idle_util_pct;
    ev["window_seconds"] = in.t.gpu_idle_window_seconds;
}

void StragglerRule::evaluate(const RuleInput& in, Findings& out) {
    std::vector<const Gpu*>& busy = busy_;  // reused between samples
    busy.clear();
    for (const auto& g : in.cur.gpus)
        if (g.utilization_pct && *g.utilization_pct > in.t.gpu_idle_util_pct) busy.push_back(&g);
    std::map<std::string, Run, std::less<>> next;
    if (busy.size() >= 2 && !peers_can_straggle(busy, in.t)) busy.clear();  // runs_ cleared below
    if (busy.size() >= 2) {
        std::string buf;
        std::vector<double>&util = util_, &power = power_;  // every busy GPU's, reused between samples
        util.clear(), power.clear();
        for (const Gpu* g : busy) {
            util.push_back(*g->utilization_pct);
            if (g->power_w) power.push_back(*g->power_w);
        }
        std::sort(util.begin(), util.end());
        std::sort(power.begin(), power.end());
        for (const Gpu* g : busy) {
            const double util_median = median_without(util, g->utilization_pct);
            const double util_gap = util_median - *g->utilization_pct;
            const double power_median = median_without(power, g->power_w);
            const double power_gap = g->power_w && power_median > 0 ? 1 - *g->power_w / power_median : 0;
            const bool every_peer_power = power.size() - (g->power_w ? 1 : 0) == busy.size() - 1;
            const bool slow = util_gap >= in.t.straggler_util_gap_pct ||
                              (g->power_w && every_peer_power && power_gap >= in.t.straggler_power_gap_frac);
            if (!slow) continue;
            const std::string_view key = gpu_key_view(*g, buf);
            const auto known_run = runs_.find(key);
            Run run = known_run == runs_.end() ? Run{} : known_run->second;
            if (run.samples++ == 0) run.since = in.cur.time;
            entry(next, key) = run;
            if (run.samples < static_cast<int>(in.t.straggler_min_samples)) continue;
            Finding& f = out.add(rule::kGpuStraggler, Severity::kWarning, SubjectKind::kGpu,
                                 1 + std::max(util_gap / 100, power_gap), Hint::kCompute);
            gpu_key_into(*g, f.reason.subject);
            std::string& msg = f.reason.message;
            append_parts(msg, gpu_name(*g), ": ", fmt_num(*g->utilization_pct),
                         " % utilization vs peer median ", fmt_num(util_median), " %");
            if (g->power_w && power_median > 0)
                append_parts(msg, ", ", fmt_num(*g->power_w), " W vs ", fmt_num(power_median), " W");
            append_parts(msg, " for ", std::to_string(run.samples),
                         " samples — a straggler: every synchronous step waits for this GPU");
            Evidence& ev = f.reason.evidence;
            add_gpu_ids(*g, ev);
            ev["utilization_pct"] = *g->utilization_pct;
            ev["peer_median_utilization_pct"] = util_median;
            if (g->power_w) ev["power_w"] = *g->power_w;
            if (power_median > 0) ev["peer_median_power_w"] = power_median;
            ev["util_gap_threshold_pct"] = in.t.straggler_util_gap_pct;
            ev["power_gap_threshold_frac"] = in.t.straggler_power_gap_frac;
            f.since = run.since;
        }
    }
    runs_ = std::move(next);
}

}  // namespace stallscope
