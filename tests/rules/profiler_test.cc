#include "libstallscope/rules/profiler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/rules/gpu_rules.h"
#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

// A healthy 8-GPU training node with one RoCE port whose data counters move every sample.
Snapshot healthy(double t) {
    Snapshot s = at(t);
    for (int i = 0; i < 8; ++i) s.gpus.push_back(gpu(i, 96, 560, 65, 1980));
    const auto k = static_cast<std::uint64_t>(t);
    s.rdma.push_back(port(
        "mlx5_0",
        counters({{"rp_cnp_handled", 10 * k}, {"out_of_sequence", 0}, {"local_ack_timeout_err", 0}}),
        counters(
            {{"port_rcv_packets", 1'000'000 * k}, {"port_rcv_data", 250'000'000 * k}, {"link_downed", 0}}),
        "ACTIVE", "ens1f0"));
    s.interfaces.push_back(iface("ens1f0", 1'000'000 * k));
    s.host_stats.mem_total_bytes = 1000;
    s.host_stats.mem_available_bytes = 600;
    s.host_stats.psi.memory_full_avg10 = 0;
    s.host_stats.oom_kills = 0;
    return s;
}

std::vector<std::string> codes(const StepVerdict& v) {
    std::vector<std::string> c;
    for (const auto& r : v.reasons) c.push_back(r.reason.code);
    return c;
}

}  // namespace

TEST_CASE("the first sample reports lifetime counters, fires no delta rule and is UNKNOWN, as --help says") {
    Profiler p;
    Snapshot s = healthy(0);
    s.rdma[0].hw_counters["out_of_sequence"] = 9'000'000;  // lifetime
    s.host_stats.oom_kills = 40;
    const Profile first = p.observe(s);
    CHECK(p.last_rates() == nullptr);
    CHECK(first.label == kLabelUnknown);  // gauges alone cannot say FAST
    CHECK(first.confidence == 0);
    CHECK(first.unknown_reason.find("first_sample") == 0);
    REQUIRE(first.reasons.size() == 1);
    CHECK(first.reasons[0].code == "delta_rules_pending");
    const Profile second = p.observe(healthy(10));
    CHECK(p.last_rates() != nullptr);
    CHECK(second.label == kLabelFast);
    CHECK(second.reasons.empty());
    CHECK(second.bottleneck_hint == "compute");
    CHECK(second.confidence > first.confidence);
}

TEST_CASE("a healthy step is FAST with a compute bottleneck and no reasons") {
    Profiler p;
    for (int i = 0; i <= 6; ++i) p.observe(healthy(i * 10));
    const StepVerdict v = p.verdict();
    CHECK(v.label == kLabelFast);
    CHECK(v.reasons.empty());
    CHECK(v.bottleneck_hint == "compute");
    CHECK(v.samples == 7);
    CHECK(v.duration_seconds() == 60);
    CHECK(v.confidence > 0.6);
}

TEST_CASE("a CNP storm makes the step SLOW with the port named and its share of the step") {
    Profiler p;
    for (int i = 0; i <= 6; ++i) {
        Snapshot s = healthy(i * 10);
        if (i >= 3) s.rdma[0].hw_counters["rp_cnp_handled"] = 600 + 20'000ull * (i - 2);
        const Profile prof = p.observe(s);
        if (i == 4) {
            CHECK(prof.label == kLabelSlow);
            CHECK(prof.reasons[0].code == "fabric_congestion");
            CHECK(prof.reasons[0].first_seen == 30);
            CHECK(prof.bottleneck_hint == "network");
        }
    }
    const StepVerdict v = p.verdict();
    CHECK(v.label == kLabelSlow);
    REQUIRE(!v.reasons.empty());
    CHECK(v.reasons[0].reason.code == "fabric_congestion");
    CHECK(v.reasons[0].samples == 4);
    CHECK(v.reasons[0].duration_seconds == 40);
    CHECK(v.reasons[0].share == doctest::Approx(40.0 / 60));
    CHECK(v.worst_port == "mlx5_0/1");
    CHECK(v.bottleneck_hint == "network");
}

TEST_CASE("reasons are ordered earliest anomaly first, and symptoms after their cause") {
    Profiler p;
    for (int i = 0; i <= 6; ++i) {
        Snapshot s = healthy(i * 10);
        for (auto& g : s.gpus) g.utilization_pct = 12;  // symptom from the very first sample
        if (i >= 2) s.rdma[0].hw_counters["rp_cnp_handled"] = 20'000ull * i;  // congestion from t=20
        if (i >= 5) s.rdma[0].counters["link_downed"] = 1;                    // flap at t=50
        p.observe(s);
    }
    const auto c = codes(p.verdict());
    REQUIRE(c.size() == 3);
    CHECK(c[0] == "fabric_congestion");
    CHECK(c[1] == "fabric_link_flap");
    CHECK(c[2] == "gpu_low_utilization");
    CHECK(p.verdict().label == kLabelFailRisk);
}

TEST_CASE("in the same interval the root cause comes first: port down before its packet loss") {
    Profiler p;
    for (int i = 0; i <= 4; ++i) {
        Snapshot s = healthy(i * 10);
        if (i == 4) {
            s.rdma[0].state = "DOWN";
            s.rdma[0].hw_counters["out_of_sequence"] = 100'000;
        }
        p.observe(s);
    }
    const auto c = codes(p.verdict());
    REQUIRE(c.size() >= 2);
    CHECK(c[0] == "fabric_port_down");
    CHECK(c[1] == "fabric_packet_loss");
}

TEST_CASE("a short SLOW burst in a long step is listed but the step stays FAST") {
    Profiler p;
    for (int i = 0; i <= 100; ++i) {
        Snapshot s = healthy(i * 10);
        if (i >= 50)
            s.rdma[0].hw_counters["rp_cnp_handled"] = 10 * i * 10 + 20'000;  // one 10 s burst at t=500
        p.observe(s);
    }
    const StepVerdict v = p.verdict();
    CHECK(v.label == kLabelFast);
    REQUIRE(v.reasons.size() == 1);
    CHECK(v.reasons[0].reason.code == "fabric_congestion");
    CHECK(v.reasons[0].share == doctest::Approx(0.01));
}

TEST_CASE("UNKNOWN verdicts carry explicit reason codes") {
    SUBCASE("step_too_short") {
        Profiler p;
        p.observe(healthy(0));
        p.observe(healthy(5));
        const StepVerdict v = p.verdict();
        CHECK(v.label == kLabelUnknown);
        CHECK(v.unknown_reasons == std::vector<std::string>{"step_too_short"});
    }
    SUBCASE("no_counters") {
        Profiler p;
        for (int i = 0; i <= 6; ++i) p.observe(at(i * 10));
        const StepVerdict v = p.verdict();
        CHECK(v.label == kLabelUnknown);
        CHECK(v.unknown_reasons == std::vector<std::string>{"no_counters"});
    }
    SUBCASE("collectors_failing, with the collector as the first reason") {
        Profiler p;
        for (int i = 0; i <= 6; ++i) {
            Snapshot s = healthy(i * 10);
            s.gpus.clear();
            s.collector_failures["nvml"] = "timeout after 2 s";
            const Profile prof = p.observe(s);
            CHECK(prof.label == kLabelUnknown);
            CHECK(prof.unknown_reason.find("collectors_failing: nvml") == 0);
        }
        const StepVerdict v = p.verdict();
        CHECK(v.label == kLabelUnknown);
        CHECK(v.unknown_reasons == std::vector<std::string>{"collectors_failing"});
        REQUIRE(!v.reasons.empty());
        CHECK(v.reasons[0].reason.code == "collector_failed");
    }
}

TEST_CASE("real evidence beats UNKNOWN: an Xid 79 in a short step is FAIL_RISK naming the GPU") {
    Profiler p;
    Snapshot s = healthy(0);
    s.xid_events.push_back(XidEvent{79, "PCI:0000:12:00", -1, "critical", "GPU has fallen off the bus."});
    p.observe(s);
    const StepVerdict v = p.verdict();
    CHECK(v.label == kLabelFailRisk);
    CHECK(v.unknown_reasons.empty());
    CHECK(v.worst_gpu == "node1:GPU 2");  // as people name it on the node
    CHECK(v.worst_gpu_uuid == "GPU-2");
    CHECK(v.confidence >= 0.9);
}

TEST_CASE("replaying snapshots read back from JSON gives the same verdict as live profiling") {
    Profiler live, replay;
    for (int i = 0; i <= 8; ++i) {
        Snapshot s = healthy(i * 10);
        if (i >= 4) s.gpus[2].temperature_c = 65 + 5 * i, s.gpus[2].sm_clock_mhz = 1980 - 80 * i;
        live.observe(s);
        std::vector<std::string> problems;
        replay.observe(snapshot_from_json(Json::parse(to_json(s).dump()), problems));
        CHECK(problems.empty());
    }
    CHECK(to_json(live.verdict()).dump() == to_json(replay.verdict()).dump());
    CHECK(live.verdict().reasons.at(0).reason.code == "gpu_thermal_throttle");
}

TEST_CASE("observe_view keeps no sample yet profiles exactly as observe does, RDMA loss included") {
    Profiler kept, viewed;
    Snapshot lent;  // one sample updated in place, as the v2 reader lends it
    for (int i = 0; i <= 8; ++i) {
        Snapshot s = healthy(i * 10);
        s.rdma[0].hw_counters["out_of_sequence"] = i >= 5 ? 100'000u * i : 0u;  // loss from the 6th on
        if (i == 6) s.rdma[0].hw_counters["out_of_sequence"].reset();           // unreadable once
        lent = s;
        const Profile a = kept.observe(s);
        const Profile b = viewed.observe_view(lent);
        CHECK(to_json(a).dump() == to_json(b).dump());
        CHECK(viewed.last_sample() == nullptr);
        REQUIRE((kept.last_rates() != nullptr) == (i > 0));
        if (i > 0) CHECK(to_json(*kept.last_rates()).dump() == to_json(*viewed.last_rates()).dump());
    }
    CHECK(to_json(kept.verdict()).dump() == to_json(viewed.verdict()).dump());
    CHECK(kept.verdict().label == kLabelFailRisk);
}

TEST_CASE("observe_view_for_verdict builds no Profile yet gives the verdict observe_view gives") {
    Profiler viewed, folded;
    for (int i = 0; i <= 12; ++i) {
        Snapshot s = healthy(i * 10);
        s.rdma[0].hw_counters["out_of_sequence"] = i >= 5 ? 100'000u * i : 0u;  // loss from the 6th on
        if (i >= 3) s.gpus[2].temperature_c = 65 + 5 * i, s.gpus[2].sm_clock_mhz = 1980 - 80 * i;
        if (i == 9) s.gpus[4].utilization_pct.reset();  // a GPU unmeasured once
        viewed.observe_view(s);
        folded.observe_view_for_verdict(s);
        CHECK(to_json(viewed.verdict()).dump() == to_json(folded.verdict()).dump());
    }
    CHECK(folded.verdict().label == kLabelFailRisk);
    CHECK(folded.verdict().reasons.size() >= 2);
}

// The verdict-only pass leaves the text of a finding that fires again unwritten (Findings::details_wanted)
// unless the verdict reads it: its first sample, a new worst score, a refresh. Rules that fire every
// sample, with scores that rise and fall: the verdict must be the one observe_view builds with every text.
TEST_CASE("observe_view_for_verdict writes a repeated finding's text only when the verdict keeps it") {
    Profiler viewed, folded;
    const double rates[] = {900, 2500, 1200, 4000, 600, 3000, 4000, 800};  // CNPs/s: peak twice at 4000
    std::uint64_t cnp = 0;
    for (int i = 0; i <= 40; ++i) {
        Snapshot s = healthy(i * 10);
        cnp += static_cast<std::uint64_t>(rates[i % 8] * 10);
        s.rdma[0].hw_counters["rp_cnp_handled"] = cnp;  // congestion, its score up and down
        RdmaPort second = s.rdma[0];
        second.device = "mlx5_1";
        if (i >= 10) second.state = "DOWN", second.phys_state = "Disabled";  // down after ACTIVE
        s.rdma.push_back(second);
        if (i >= 2) s.gpus[3].remapped_rows_pending = 1;                   // every sample from the 3rd on
        s.gpus[5].memory_used_bytes = (80ull << 30) / 100 * (98 + i % 3);  // 98-100 %
        s.gpus[6].temperature_c = 85 + (i * 5) % 7;
        s.gpus[7].utilization_pct = 0, s.gpus[7].power_w = 90;         // idle past the 300 s window
        if (i % 4 != 0) s.gpus[1].throttle_reasons = {"HW Slowdown"};  // its message refreshes each time
        if (i >= 6)  // every GPU: one node-wide reason, refreshing too
            for (Gpu& g : s.gpus) g.throttle_reasons.push_back("HW Power Brake Slowdown");
        viewed.observe_view(s);
        folded.observe_view_for_verdict(s);
        CAPTURE(i);
        REQUIRE(to_json(viewed.verdict()).dump() == to_json(folded.verdict()).dump());
    }
    const StepVerdict v = folded.verdict();
    const auto has = [&](const char* code) {
        const auto c = codes(v);
        return std::find(c.begin(), c.end(), code) != c.end();
    };
    for (const char* code :
         {"fabric_congestion", "fabric_port_down", "gpu_row_remap_pending", "gpu_memory_high",
          "gpu_temperature_high", "gpu_idle", "gpu_hw_slowdown", "gpu_power_brake"})
        CHECK_MESSAGE(has(code), code);
    for (const auto& r : v.reasons)
        if (r.reason.code == "gpu_hw_slowdown") {  // refreshed: the evidence is the message's sample's
            const auto it = r.reason.evidence.find("window_seconds");
            REQUIRE(it != r.reason.evidence.end());
            CHECK(std::get<double>(it->second) == 400);
            CHECK(r.reason.message.find("of the 400 s observed") != std::string::npos);
        }
    for (const auto& r : v.reasons)
        if (r.reason.code == "fabric_congestion") {  // the evidence of the worst sample, first reached
            const auto it = r.worst_evidence.find("rp_cnp_handled_per_s");
            REQUIRE(it != r.worst_evidence.end());
            CHECK(std::get<double>(it->second) == doctest::Approx(4000));
        }
}

// One sample with one finding (gpu_memory_high on GPU-1, score 2), as the Profiler hands it to the verdict.
struct OneFinding {
    Findings findings;
    Finding& finding = findings.add(rule::kGpuMemoryHigh, Severity::kWarning, SubjectKind::kGpu, 2);
    const std::vector<Gpu> gpus;
    const std::string host = "n1";
    SampleOutcome sample;
    OneFinding() {
        finding.reason.subject = "GPU-1";
        sample.findings = &findings;
        sample.label = Label::kFast;
        sample.host = &host;
        sample.gpus = &gpus;
    }
    OneFinding(const OneFinding&) = delete;
    OneFinding& operator=(const OneFinding&) = delete;
};

TEST_CASE("The verdict wants a finding's text when it first fires or beats its worst score") {
    VerdictAccumulator verdict;
    OneFinding one;
    Finding& f = one.finding;
    CHECK(verdict.wants_details(f));  // never fired
    verdict.add(one.sample);
    CHECK_FALSE(verdict.wants_details(f));  // the same again
    f.score = 1.5;
    CHECK_FALSE(verdict.wants_details(f));  // lower
    f.score = 2.5;
    CHECK(verdict.wants_details(f));  // a new worst
    f.score = 2.5;
    f.refresh = true;
    CHECK_FALSE(verdict.wants_details(f));  // "so far": the latest is kept, from f.late when built
    f.reason.subject = "GPU-2";
    CHECK(verdict.wants_details(f));  // another subject: another reason, first firing
    f.refresh = false;
    CHECK(verdict.wants_details(f));
    Findings outside;  // not in a verdict-only pass: every finding's text is written
    CHECK(outside.details_wanted(f));
    outside.set_verdict_only(&verdict);
    f.reason.subject = "GPU-1";
    f.score = 1.5;
    CHECK_FALSE(outside.details_wanted(f));
}

// A Finding caches its verdict entry (Finding::verdict_entry): a copy of the accumulator has entries of its
// own, and must count into them, not into the original's through the finding's cache.
TEST_CASE("A copied verdict counts into its own entries, not through a finding's cached one") {
    VerdictAccumulator original;
    OneFinding one;
    SampleOutcome& sample = one.sample;
    original.add(sample);  // the finding now names the original's entry
    VerdictAccumulator copy = original;
    for (int i = 1; i <= 3; ++i) {
        sample.time = i;
        copy.add(sample);
    }
    const Thresholds t;
    REQUIRE(original.build(t).reasons.size() == 1);
    REQUIRE(copy.build(t).reasons.size() == 1);
    CHECK(original.build(t).reasons[0].samples == 1);
    CHECK(copy.build(t).reasons[0].samples == 4);
    original = copy;  // assigned: a new id again
    sample.time = 4;
    copy.add(sample);
    CHECK(original.build(t).reasons[0].samples == 4);
    CHECK(copy.build(t).reasons[0].samples == 5);
}

TEST_CASE("Numbers in messages read as printf wrote them: fixed to 0-2 decimals, %.2g below 0.01") {
    // The snprintf formatting fmt_num had before it used std::to_chars, as the reference.
    const auto reference = [](double value) {
        char buf[64];
        const double mag = std::fabs(value);
        if (mag >= 100 || value == std::floor(value))
            std::snprintf(buf, sizeof buf, "%.0f", value);
        else if (mag >= 10)
            std::snprintf(buf, sizeof buf, "%.1f", value);
        else if (mag >= 0.01)
            std::snprintf(buf, sizeof buf, "%.2f", value);
        else
            std::snprintf(buf, sizeof buf, "%.2g", value);
        std::string s = buf;
        if (s.find('.') != std::string::npos && s.find('e') == std::string::npos) {
            while (s.back() == '0') s.pop_back();
            if (s.back() == '.') s.pop_back();
        }
        return s;
    };
    std::vector<double> values = {0,
                                  -0.0,
                                  1,
                                  0.5,
                                  2.5,
                                  0.125,
                                  0.005,
                                  0.015,
                                  0.0049,
                                  9.995,
                                  10.05,
                                  99.95,
                                  100.5,
                                  1e-300,
                                  -3.14159,
                                  1e20,
                                  1e63,
                                  1.5e300,
                                  -1e308,
                                  123456789.987,
                                  0.01,
                                  0.00999,
                                  1e-5,
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(),
                                  std::numeric_limits<double>::denorm_min(),
                                  600,
                                  -42,
                                  999999999999999,
                                  1e15,
                                  -1e15,
                                  9007199254740992.0,
                                  -9007199254740994.0};
    std::uint64_t seed = 88;
    for (int i = 0; i < 20000; ++i) {  // every magnitude, halves and near-halves of the decimals
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const double unit = static_cast<double>(seed >> 11) / static_cast<double>(1ull << 53);
        const double v = (unit - 0.5) * std::pow(10.0, static_cast<double>(static_cast<int>(seed % 13) - 5));
        values.push_back(v);
        values.push_back(std::round(v * 200) / 200);  // x.xx5: rounding ties
        values.push_back(std::round(v));              // whole numbers of every magnitude
    }
    for (const double v : values) {
        CAPTURE(v);
        CHECK(fmt_num(v) == reference(v));
    }
}

// Replay lends one sample, updated in place, under the reader's shape (snapshot.h): the profiler keeps the
// sample's rows in Rates and its GPUs' slots while the shape holds, and resolves them again when a new
// shape says the entities changed, or the first Rates come. Here GPU-2 reports ECC errors in the second
// sample (the first with Rates), two GPUs swap places, then one of them reports ECC errors: the verdict
// must be the one built from copies (no shape), naming the right GPUs.
TEST_CASE("a lent sample's rows and GPU slots are resolved again when its shape changes") {
    Profiler lent, copied;
    Snapshot s = healthy(0);
    for (Gpu& g : s.gpus) g.ecc_uncorrected = 0;
    SnapshotShape shape = SnapshotShape::fresh();
    for (int i = 1; i <= 8; ++i) {
        const auto k = static_cast<std::uint64_t>(i * 10);
        s.time = i * 10;
        s.rdma[0].hw_counters["rp_cnp_handled"] = 10 * k;
        s.rdma[0].counters["port_rcv_packets"] = 1'000'000 * k;
        s.rdma[0].counters["port_rcv_data"] = 250'000'000 * k;
        s.interfaces[0].rx_bytes = 1'000'000 * k;
        if (i == 4) {
            std::swap(s.gpus[0], s.gpus[1]);
            shape = SnapshotShape::fresh();
        }
        if (i == 2) s.gpus[2].ecc_uncorrected = 5u;      // GPU-2
        if (i >= 5) s.gpus[0].ecc_uncorrected = 3u * k;  // GPU-1, first since the swap
        lent.observe_view_for_verdict(s, shape);
        copied.observe_view_for_verdict(Snapshot(s));
        CAPTURE(i);
        REQUIRE(to_json(lent.verdict()).dump() == to_json(copied.verdict()).dump());
    }
    std::vector<std::string> ecc;
    for (const auto& r : lent.verdict().reasons)
        if (r.reason.code == "gpu_ecc_uncorrected") ecc.push_back(r.reason.subject);
    std::sort(ecc.begin(), ecc.end());
    CHECK(ecc == std::vector<std::string>{"GPU-1", "GPU-2"});
}
