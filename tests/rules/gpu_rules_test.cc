#include "libstallscope/rules/gpu_rules.h"

#include <doctest/doctest.h>

#include <set>

#include "libstallscope/rules/gpu_window_rules.h"
#include "libstallscope/rules/host_rules.h"
#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

Snapshot gpus_at(double t, std::vector<Gpu> gpus) {
    Snapshot s = at(t);
    s.gpus = std::move(gpus);
    return s;
}

std::vector<Gpu> eight(double util, double power = 550) {
    std::vector<Gpu> g;
    for (int i = 0; i < 8; ++i) g.push_back(gpu(i, util, power));
    return g;
}

// The median of `v` as the straggler rule takes a peer median (0 when empty).
double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A fixed-seed draw of 0 .. below-1, the same sequence every run.
struct Draw {
    std::uint32_t seed;
    std::uint32_t operator()(std::uint32_t below) {
        return (seed = seed * 1103515245u + 12345u) / 65536u % below;
    }
};

}  // namespace

TEST_CASE("low mean GPU utilization is SLOW; busy GPUs are not") {
    auto out = run_one(gpu_low_utilization_rule, gpus_at(0, eight(10)));
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "gpu_low_utilization");
    CHECK(num(out[0], "mean_utilization_pct") == 10);
    CHECK(run_one(gpu_low_utilization_rule, gpus_at(0, eight(95))).empty());
}

TEST_CASE("GPU memory near full and high temperature are warnings that do not change the label") {
    auto s = gpus_at(0, eight(95));
    s.gpus[2].memory_used_bytes = 79ull << 30;
    s.gpus[5].temperature_c = 88;
    auto mem = run_one(gpu_memory_high_rule, s);
    REQUIRE(mem.size() == 1);
    CHECK(mem[0].reason.subject == "GPU-2");
    CHECK(mem[0].reason.label == kLabelFast);
    auto hot = run_one(gpu_temperature_rule, s);
    REQUIRE(hot.size() == 1);
    CHECK(hot[0].reason.subject == "GPU-5");
}

TEST_CASE("uncorrected ECC during the step and pending row remaps are FAIL_RISK; lifetime ECC is not") {
    auto a = gpus_at(0, eight(95));
    auto b = gpus_at(10, eight(95));
    for (auto* s : {&a, &b})
        for (auto& g : s->gpus) g.ecc_uncorrected = 12;  // lifetime, flat
    CHECK(run_pair(gpu_ecc_rule, a, b).empty());
    b.gpus[3].ecc_uncorrected = 13;
    b.gpus[6].remapped_rows_pending = 1;
    auto out = run_pair(gpu_ecc_rule, a, b);
    REQUIRE(out.size() == 2);
    CHECK(out[0].reason.code == "gpu_ecc_uncorrected");
    CHECK(out[0].reason.subject == "GPU-3");
    CHECK(out[1].reason.code == "gpu_row_remap_pending");
    CHECK(out[1].reason.label == kLabelFailRisk);
}

TEST_CASE("Xid classes: 79 critical, 13 application, 92 warning, 63 info; kmsg severity can raise") {
    CHECK(xid_class(79, "") == XidClass::kCritical);
    CHECK(xid_class(48, "") == XidClass::kCritical);
    CHECK(xid_class(13, "") == XidClass::kApp);
    CHECK(xid_class(31, "warning") == XidClass::kApp);
    CHECK(xid_class(92, "") == XidClass::kWarning);
    CHECK(xid_class(63, "") == XidClass::kInfo);
    CHECK(xid_class(149, "critical") == XidClass::kCritical);
    CHECK(xid_class(79, "info") == XidClass::kCritical);  // never lowered
}

TEST_CASE("an Xid event is matched to the step's GPU by PCI bus id, deduplicated against Gpu::xid") {
    CHECK(normalize_bus_id("PCI:0000:13:00") == "13:00");
    CHECK(normalize_bus_id("00000000:13:00.0") == "13:00");
    auto s = gpus_at(0, eight(95));
    s.xid_events.push_back(XidEvent{79, "PCI:0000:13:00", -1, "critical", "GPU has fallen off the bus."});
    s.gpus[3].xid = {79};
    auto out = run_one(xid_rule, s);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "gpu_xid_critical");
    CHECK(out[0].reason.subject == "GPU-3");
    CHECK(out[0].reason.label == kLabelFailRisk);

    auto other = gpus_at(0, eight(95));
    other.xid_events.push_back(XidEvent{79, "PCI:0000:c1:00", -1, "critical", ""});
    CHECK(run_one(xid_rule, other)[0].reason.code == "gpu_xid_other_gpu");
}

TEST_CASE("HW power brake in most of the window is SLOW; occasional bits are not") {
    HwSlowdownRule rule;
    std::vector<Snapshot> series;
    for (int i = 0; i < 10; ++i) {
        auto s = gpus_at(i * 10, eight(95));
        if (i >= 3) s.gpus[1].throttle_reasons = {"HW Power Brake Slowdown"};
        series.push_back(s);
    }
    auto out = run_series(rule, series);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "gpu_power_brake");
    CHECK(out[0].reason.subject == "GPU-1");
    CHECK(out[0].since == 30);
    HwSlowdownRule rare;
    series[5].gpus[1].throttle_reasons.clear();
    for (int i = 6; i < 10; ++i) series[i].gpus[1].throttle_reasons.clear();
    CHECK(run_series(rare, series).empty());
}

TEST_CASE("the clocks-event mask decodes the three hardware slowdown bits only") {
    Gpu g = gpu(0, 90);
    g.throttle_reasons_mask = 0x4 | 0x20 | 0x40;  // SW power cap, SW thermal, HW thermal
    CHECK(hw_slowdown_bits(g) == kHwThermal);
    Gpu n = gpu(0, 90);
    n.throttle_reasons = {"SW Power Cap", "HW Slowdown"};
    CHECK(hw_slowdown_bits(n) == kHwSlowdown);
}

TEST_CASE("thermal throttle: clock drop with rising temperature; a power-capped clock drop is not") {
    ThermalThrottleRule rule;
    auto hot =
        run_series(rule, {gpus_at(0, {gpu(0, 99, 650, 70, 1980)}), gpus_at(10, {gpu(0, 99, 600, 80, 1900)}),
                          gpus_at(20, {gpu(0, 99, 560, 88, 1500)})});
    REQUIRE(hot.size() == 1);
    CHECK(hot[0].reason.code == "gpu_thermal_throttle");
    CHECK(num(hot[0], "peak_sm_clock_mhz") == 1980);
    ThermalThrottleRule capped;
    CHECK(run_series(capped,
                     {gpus_at(0, {gpu(0, 99, 700, 70, 1980)}), gpus_at(10, {gpu(0, 99, 700, 71, 1500)})})
              .empty());
}

TEST_CASE("busy-wait hang: high utilization at idle power for N samples is FAIL_RISK") {
    BusyWaitHangRule rule;
    std::vector<Snapshot> series;
    for (int i = 0; i < 5; ++i) series.push_back(gpus_at(i * 10, eight(100, 90)));
    auto out = run_series(rule, series);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "gpu_busy_wait_hang");
    CHECK(num(out[0], "gpus_hung") == 8);
    CHECK(out[0].since == 0);
    BusyWaitHangRule short_run;
    series.pop_back();
    CHECK(run_series(short_run, series).empty());
}

TEST_CASE("idle GPUs: 2 of 8 at 0 % for the whole window") {
    IdleGpuRule rule;
    std::vector<Snapshot> series;
    for (int i = 0; i <= 10; ++i) {
        auto g = eight(95);
        g[3].utilization_pct = 0;
        g[6].utilization_pct = 0;
        series.push_back(gpus_at(i * 30, g));
    }
    auto out = run_series(rule, series);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "gpu_idle");
    CHECK(num(out[0], "gpus_idle") == 2);
    CHECK(num(out[0], "gpus_total") == 8);
    IdleGpuRule early;
    CHECK(run_series(early, std::vector<Snapshot>(series.begin(), series.begin() + 5)).empty());
}

TEST_CASE("straggler: one busy GPU far below its peers for several samples") {
    StragglerRule rule;
    std::vector<Snapshot> series;
    for (int i = 0; i < 3; ++i) {
        auto g = eight(96);
        g[4].utilization_pct = 45;
        g[4].power_w = 250;
        series.push_back(gpus_at(i * 10, g));
    }
    auto out = run_series(rule, series);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "gpu_straggler");
    CHECK(out[0].reason.subject == "GPU-4");
    StragglerRule even;
    CHECK(run_series(even, {gpus_at(0, eight(96)), gpus_at(1, eight(96)), gpus_at(2, eight(96))}).empty());
}

TEST_CASE("straggler: each GPU is compared with the median of its own peers, ties and missing power too") {
    // Every busy GPU fires (gap threshold far below any gap), so each one's evidence shows the medians
    // the rule used; they must be those of its peers' values, sorted on their own.
    Thresholds t;
    t.straggler_util_gap_pct = -1000;
    t.straggler_min_samples = 1;
    const auto peer_median = median_of;
    Draw next{12345};
    for (int round = 0; round < 200; ++round) {
        CAPTURE(round);
        std::vector<Gpu> g;
        const int n = 2 + static_cast<int>(next(7));
        for (int i = 0; i < n; ++i) {
            g.push_back(gpu(i, 20 + 10 * next(4), 300 + 50 * next(3)));  // few values: ties
            if (next(3) == 0) g.back().power_w.reset();
        }
        if (next(2)) g[next(static_cast<std::uint32_t>(n))].utilization_pct = 0;  // idle: not a peer
        StragglerRule rule;
        const auto out = run_series(rule, {gpus_at(0, g)}, t);
        for (const Finding& f : out) {
            const Gpu* self = nullptr;
            for (const Gpu& x : g)
                if (x.uuid == f.reason.subject) self = &x;
            REQUIRE(self);
            std::vector<double> util, power;
            for (const Gpu& peer : g)
                if (&peer != self && *peer.utilization_pct > t.gpu_idle_util_pct) {
                    util.push_back(*peer.utilization_pct);
                    if (peer.power_w) power.push_back(*peer.power_w);
                }
            CHECK(num(f, "peer_median_utilization_pct") == peer_median(util));
            CHECK(num(f, "peer_median_power_w") == (power.empty() ? -1 : peer_median(power)));
        }
        std::size_t busy = 0;
        for (const Gpu& x : g) busy += *x.utilization_pct > t.gpu_idle_util_pct;
        CHECK(out.size() == (busy >= 2 ? busy : 0));
    }
}

TEST_CASE("straggler: a node whose spread cannot reach a gap is passed over, and no straggler is missed") {
    // The rule skips the medians when max - min utilization is under the utilization gap and
    // 1 - min/max power under the power gap. Values on a coarse grid land on both thresholds exactly
    // (a 30-point spread, a 40 % power gap): every GPU the full comparison calls a straggler must be found.
    Thresholds t;
    t.straggler_min_samples = 1;
    const auto median = median_of;
    Draw next{777};
    int fired = 0, quiet = 0;
    for (int round = 0; round < 2000; ++round) {
        CAPTURE(round);
        std::vector<Gpu> g;
        const int n = 2 + static_cast<int>(next(7));
        const bool wide = next(2) == 0;  // half the rounds spread far enough to fire
        for (int i = 0; i < n; ++i) {
            g.push_back(gpu(i, 100 - 10 * next(wide ? 5 : 4), 500 - 100 * next(wide ? 3 : 2)));
            if (next(8) == 0) g.back().power_w.reset();
        }
        std::set<std::string> expected;
        for (const Gpu& self : g) {
            std::vector<double> util, power;
            bool every_peer_power = true;
            for (const Gpu& peer : g)
                if (&peer != &self) {
                    util.push_back(*peer.utilization_pct);
                    if (peer.power_w)
                        power.push_back(*peer.power_w);
                    else
                        every_peer_power = false;
                }
            const double power_median = median(power);
            const bool by_util = median(util) - *self.utilization_pct >= t.straggler_util_gap_pct;
            const bool by_power = self.power_w && every_peer_power && power_median > 0 &&
                                  1 - *self.power_w / power_median >= t.straggler_power_gap_frac;
            if (by_util || by_power) expected.insert(self.uuid);
        }
        StragglerRule rule;
        std::set<std::string> found;
        for (const Finding& f : run_series(rule, {gpus_at(0, g)}, t)) found.insert(f.reason.subject);
        CHECK(found == expected);
        (expected.empty() ? quiet : fired)++;
    }
    CHECK(fired > 200);  // both kinds of node were drawn
    CHECK(quiet > 200);
}

TEST_CASE("straggler by power alone: only when every peer reports its power") {
    Thresholds t;
    t.straggler_min_samples = 1;
    auto g = eight(96);
    g[2].power_w = 100;  // same utilization, far less power than the peers' 550 W
    StragglerRule rule;
    const auto out = run_series(rule, {gpus_at(0, g)}, t);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.subject == "GPU-2");
    g[5].power_w.reset();  // one peer without power: the power comparison is off
    StragglerRule partial;
    CHECK(run_series(partial, {gpus_at(0, g)}, t).empty());
}

// The GPUs' slots (GpuSlots, hence every rule's per-GPU state) are a KeyedState (tried first: the entry
// after the last one looked up): whatever order the keys come in, it must answer as a map would.
TEST_CASE("KeyedState answers as a map, whatever order the GPUs come in") {
    KeyedState<int> state;
    std::map<std::string, int> reference;
    const std::vector<std::vector<std::string>> samples = {
        {"GPU-a", "GPU-b", "GPU-c"},           {"GPU-a", "GPU-b", "GPU-c"},             // steady
        {"GPU-c", "GPU-a", "GPU-b"},           {"GPU-b"},                               // rotated; one GPU
        {"GPU-c", "GPU-b", "GPU-a"},                                                    // reversed
        {"GPU-a", "gpu3", "GPU-b", "GPU-c"},   {"GPU-a", "gpu3", "GPU-b", "GPU-c"},     // one more
        {"GPU-a", "GPU-a", "GPU-c"},           {"GPU-ab", "GPU-a", "GPU-abc", "gpu3"},  // twice; prefixes
        {"GPU-a", "GPU-b", "GPU-c", "GPU-ab"},
    };
    int n = 0;
    for (const auto& keys : samples)
        for (const std::string& key : keys) {
            CAPTURE(key);
            int& mine = state[key];
            int& theirs = reference[key];
            CHECK(mine == theirs);
            mine = theirs = ++n;
        }
    CHECK(state.size() == reference.size());
    for (const auto& [key, value] : reference) CHECK(state[key] == value);
}

// Findings::clear() keeps the findings' storage for the next sample; add() must leave nothing of the
// finding that held the slot before (a message appended to the old one, stale evidence, an old `since`).
TEST_CASE("Findings: a slot is written again in place, with nothing of its last finding left") {
    Findings out;
    Finding& first = out.add(rule::kGpuStraggler, Severity::kWarning, SubjectKind::kGpu, 1.5, Hint::kCompute);
    first.reason.subject = "GPU-0";
    first.reason.message.assign(200, 'm');
    first.reason.evidence["share"] = 1.0;
    first.reason.first_seen = 5;
    first.since = 3;
    first.refresh = true;
    const char* storage = first.reason.message.data();
    out.clear();
    CHECK(out.empty());

    Finding& again = out.add(rule::kGpuIdle, Label::kFast, Severity::kInfo, SubjectKind::kOther);
    CHECK(&again == &first);
    CHECK(out.size() == 1);
    CHECK(again.reason.code == "gpu_idle");
    CHECK(again.reason.severity == "info");
    CHECK(again.reason.label == kLabelFast);
    CHECK(again.reason.subject.empty());
    CHECK(again.reason.message.empty());
    CHECK(again.reason.evidence.empty());
    CHECK(again.reason.first_seen == 0);
    CHECK(again.kind == SubjectKind::kOther);
    CHECK(again.score == 1);
    CHECK(again.hint == Hint::kNone);
    CHECK(again.since == 0);
    CHECK_FALSE(again.refresh);
    again.reason.message.assign(150, 'n');
    CHECK(again.reason.message.data() == storage);  // the last finding's storage: nothing allocated

    out.push_back(make_finding(rule::kHostOomKill, Severity::kCritical, "host", SubjectKind::kHost,
                               "an OOM kill", {}, 2));
    REQUIRE(out.size() == 2);
    CHECK(out[1].reason.code == "host_oom_kill");
    CHECK(out[1].reason.category == "system");
    CHECK(out[1].reason.label == kLabelFailRisk);
    CHECK(out.back().reason.message == "an OOM kill");
}

// A slot's reason strings follow its typed fields: rewritten when the rule, label or severity changes,
// and all of them after the profiler took the reason away (Finding::take_reason).
TEST_CASE("Findings: a kept slot's strings follow its rule, label and severity") {
    Findings out;
    Finding& f =
        out.add(rule::kGpuTelemetryMissing, Label::kUnknown, Severity::kWarning, SubjectKind::kOther);
    CHECK(f.reason.code == "gpu_telemetry_missing");
    CHECK(f.reason.category == "telemetry");
    CHECK(f.reason.label == kLabelUnknown);
    out.clear();
    out.add(rule::kGpuTelemetryMissing, Label::kFast, Severity::kInfo, SubjectKind::kOther);
    CHECK(f.reason.label == kLabelFast);
    CHECK(f.reason.severity == "info");
    const Reason taken = f.take_reason();
    CHECK(taken.code == "gpu_telemetry_missing");
    out.clear();
    out.add(rule::kGpuTelemetryMissing, Label::kFast, Severity::kInfo, SubjectKind::kOther);
    CHECK(f.reason.code == "gpu_telemetry_missing");
    CHECK(f.reason.category == "telemetry");
    CHECK(f.reason.label == kLabelFast);
    CHECK(f.reason.severity == "info");
    out.clear();
    out.add(rule::kHostMemoryLow, Severity::kWarning, SubjectKind::kHost);
    CHECK(f.reason.code == "host_memory_low");
    CHECK(f.reason.category == "system");
    CHECK(f.reason.label == kLabelSlow);
    CHECK(f.reason.severity == "warning");
}

// The rules that write into a slot give what a fresh one gets, sample after sample.
TEST_CASE("GPU rules firing every sample write the same findings into a reused slot as into a new one") {
    HwSlowdownRule reused_rule, fresh_rule;
    ThermalThrottleRule reused_thermal, fresh_thermal;
    const Thresholds t;
    Findings reused;
    for (int i = 0; i < 6; ++i) {
        CAPTURE(i);
        Snapshot s = gpus_at(i * 10, eight(95));
        s.gpus[1].throttle_reasons = {"HW Thermal Slowdown"};
        s.gpus[1].remapped_rows_pending = 1;
        s.gpus[2].sm_clock_mhz = i == 0 ? 1980 : 1400;
        s.gpus[2].temperature_c = i == 0 ? 60 : 88;
        s.gpus[3].memory_used_bytes = 79ull << 30;
        s.gpus[3].memory_total_bytes = 80ull << 30;
        const RuleInput in{s, nullptr, nullptr, t};
        reused.clear();
        Findings fresh;
        reused_rule.evaluate(in, reused), fresh_rule.evaluate(in, fresh);
        reused_thermal.evaluate(in, reused), fresh_thermal.evaluate(in, fresh);
        gpu_ecc_rule(in, reused), gpu_ecc_rule(in, fresh);
        gpu_memory_high_rule(in, reused), gpu_memory_high_rule(in, fresh);
        REQUIRE(reused.size() == fresh.size());
        // remap and memory from the first sample; the slowdown share and the thermal drop from the second
        CHECK(reused.size() == (i == 0 ? 2u : 4u));
        for (std::size_t k = 0; k < fresh.size(); ++k) {
            CAPTURE(fresh[k].reason.code);
            CHECK(reused[k].reason.code == fresh[k].reason.code);
            CHECK(reused[k].reason.subject == fresh[k].reason.subject);
            CHECK(reused[k].reason.message == fresh[k].reason.message);
            CHECK(reused[k].reason.evidence == fresh[k].reason.evidence);
            CHECK(reused[k].since == fresh[k].since);
            CHECK(reused[k].refresh == fresh[k].refresh);
        }
    }
}
