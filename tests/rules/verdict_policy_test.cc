// The verdict policy (libstallscope/rules/README.md), one test per wrong-answer class of issue 13: time
// (sustained / transient / periodic / start-up), one vs all (rails, GPUs), evidence vs "too short", health
// claimed without data, contradictions and repetition.
#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <string_view>

#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/kmsg/xid_parser.h"
#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

// A healthy 8-GPU node with two busy RoCE rails (mlx5_0, mlx5_1); counters move with time.
Snapshot node(double t, double util = 96) {
    Snapshot s = at(t);
    s.host = "gpu-node-3";
    for (int i = 0; i < 8; ++i) s.gpus.push_back(gpu(i, util, 560, 65, 1980));
    const auto k = static_cast<std::uint64_t>(t) + 1;
    for (const char* dev : {"mlx5_0", "mlx5_1"})
        s.rdma.push_back(port(dev, counters({{"rp_cnp_handled", 0}, {"local_ack_timeout_err", 0}}),
                              counters({{"port_rcv_packets", 1'000'000 * k},
                                        {"port_xmit_data", 250'000'000 * k},
                                        {"link_downed", 0}}),
                              "ACTIVE"));
    s.host_stats.mem_total_bytes = 1000;
    s.host_stats.mem_available_bytes = 600;
    s.host_stats.psi.memory_full_avg10 = 0;
    s.host_stats.oom_kills = 0;
    return s;
}

using Edit = std::function<void(int i, Snapshot& s)>;

StepVerdict run(int samples, double interval, const Edit& edit, Thresholds t = {}) {
    Profiler p(t);
    for (int i = 0; i < samples; ++i) {
        Snapshot s = node(i * interval);
        if (edit) edit(i, s);
        p.observe(std::move(s));
    }
    return p.verdict();
}

const ReasonSummary* find(const StepVerdict& v, const std::string& code) {
    for (const auto& r : v.reasons)
        if (r.reason.code == code) return &r;
    return nullptr;
}

int warnings_or_worse(const StepVerdict& v) {
    int n = 0;
    for (const auto& r : v.reasons) n += r.reason.severity != "info";
    return n;
}

void set_util(Snapshot& s, double util) {
    for (auto& g : s.gpus) g.utilization_pct = util;
}

}  // namespace

TEST_CASE("time: 5 checkpoint dips of ~15 s every ~5 min in a long healthy step are info, never a warning") {
    // 25 min sampled every 5 s; from minute 1, every 5 min the GPUs sit at 5 % for 15 s.
    const auto v = run(301, 5, [](int i, Snapshot& s) {
        if (i >= 12 && (i - 12) % 60 < 3) set_util(s, 5);
    });
    INFO((v.reasons.empty() ? std::string() : v.reasons[0].reason.message));
    CHECK(v.label == kLabelFast);
    CHECK(warnings_or_worse(v) == 0);
    const auto* dips = find(v, "gpu_low_utilization");
    REQUIRE(dips != nullptr);
    CHECK(dips->reason.severity == "info");
    CHECK(dips->reason.message.find("5 dips of ~15 s, every ~5 min") != std::string::npos);
}

TEST_CASE("time: sustained low utilization stays a warning and makes the step SLOW") {
    const auto v = run(61, 5, [](int i, Snapshot& s) {
        if (i >= 20 && i < 40) set_util(s, 8);  // 100 s in one piece, after the GPUs were busy
    });
    CHECK(v.label == kLabelSlow);
    REQUIRE(!v.reasons.empty());
    CHECK(v.reasons[0].reason.code == "gpu_low_utilization");
    CHECK(v.reasons[0].reason.severity == "warning");
}

TEST_CASE("time: short dips that together cover a quarter of the step are pervasive, not transient") {
    const auto v = run(121, 5, [](int i, Snapshot& s) {
        if (i % 8 < 3) set_util(s, 5);  // 15 s low out of every 40 s
    });
    CHECK(v.label == kLabelSlow);
    CHECK(find(v, "gpu_low_utilization")->reason.severity == "warning");
}

TEST_CASE("time: data-loader warm-up before the GPUs get busy is start-up, listed as info") {
    const auto v = run(121, 5, [](int i, Snapshot& s) {
        if (i < 9) set_util(s, i < 4 ? 0 : 12);  // 45 s of model load / NCCL init / first batches
    });
    CHECK(v.label == kLabelFast);
    CHECK(warnings_or_worse(v) == 0);
    const auto* startup = find(v, "gpu_low_utilization");
    REQUIRE(startup != nullptr);
    CHECK(startup->reason.message.find("start-up") != std::string::npos);
}

TEST_CASE("time: GPUs that never get busy are not start-up") {
    const auto v = run(41, 5, [](int, Snapshot& s) { set_util(s, 10); });
    CHECK(v.label == kLabelSlow);
    CHECK(v.reasons[0].reason.code == "gpu_low_utilization");
}

TEST_CASE("one of N: a compute rail DOWN from the first sample while its sibling carries traffic is SLOW") {
    const auto v = run(10, 10, [](int i, Snapshot& s) {
        auto& dead = s.rdma[1];
        dead.state = "DOWN";
        dead.phys_state = "Disabled";
        dead.counters = counters({{"port_rcv_packets", 5}, {"port_xmit_data", 7}, {"link_downed", 3}});
        (void)i;
    });
    CHECK(v.label == kLabelSlow);
    REQUIRE(!v.reasons.empty());
    CHECK(v.reasons[0].reason.code == "fabric_rail_down");
    CHECK(v.reasons[0].reason.subject == "mlx5_1/1");
    CHECK(v.worst_port == "mlx5_1/1");
    CHECK(find(v, "fabric_port_inactive") == nullptr);  // no "not used" next to "rail missing"
}

TEST_CASE("one of N: an unused port of another link layer is info, the step stays FAST") {
    const auto v = run(10, 10, [](int, Snapshot& s) {
        RdmaPort spare = port("mlx5_4", {}, {}, "DOWN");
        spare.link_layer = "InfiniBand";
        s.rdma.push_back(spare);
    });
    CHECK(v.label == kLabelFast);
    REQUIRE(find(v, "fabric_port_inactive") != nullptr);
    CHECK(warnings_or_worse(v) == 0);
}

TEST_CASE("evidence beats too short: a 25 s step with a port going DOWN and ACK timeouts is FAIL_RISK") {
    const auto v = run(6, 5, [](int i, Snapshot& s) {
        if (i >= 2) {
            s.rdma[0].state = "DOWN";
            s.rdma[0].phys_state = "Polling";
            s.rdma[0].hw_counters["local_ack_timeout_err"] = 5000ull * static_cast<unsigned>(i - 1);
        }
    });
    CHECK(v.label == kLabelFailRisk);
    CHECK(v.unknown_reasons.empty());
    CHECK(v.reasons[0].reason.code == "fabric_port_down");
    CHECK(find(v, "fabric_ack_timeout") != nullptr);
    // ... and without evidence the same short step is UNKNOWN(step_too_short)
    const auto quiet = run(6, 5, nullptr);
    CHECK(quiet.label == kLabelUnknown);
    CHECK(quiet.unknown_reasons == std::vector<std::string>{"step_too_short"});
}

TEST_CASE("no health without data: 2 GPUs allocated and NVML not loadable is UNKNOWN, not FAST 0.82") {
    const auto v = run(10, 10, [](int, Snapshot& s) {
        s.gpus.clear();
        s.context.gpus = {"0", "1"};
        s.warnings = {"nvml: libnvidia-ml.so.1 not loadable: cannot open shared object file"};
    });
    CHECK(v.label == kLabelUnknown);
    CHECK(v.confidence == 0);
    CHECK(v.unknown_reasons == std::vector<std::string>{"gpu_telemetry_missing"});
    CHECK(v.gpus_allocated == 2);  // for "gpus=0/2" in the job comment
    CHECK(v.gpus_measured == 0);
    const auto* missing = find(v, "gpu_telemetry_missing");
    REQUIRE(missing != nullptr);
    CHECK(missing->reason.category == "telemetry");
    CHECK(missing->reason.message.find("0 of 2") != std::string::npos);
    CHECK(missing->reason.message.find("not loadable") != std::string::npos);
}

TEST_CASE("no health without data: utilization Not Supported lowers the confidence and is named") {
    const auto healthy = run(10, 10, nullptr);
    const auto v = run(10, 10, [](int, Snapshot& s) {
        for (int g : {1, 5}) s.gpus[static_cast<size_t>(g)].utilization_pct.reset();
    });
    CHECK(v.label == kLabelFast);
    CHECK(v.confidence < healthy.confidence - 0.02);
    const auto* missing = find(v, "gpu_telemetry_missing");
    REQUIRE(missing != nullptr);
    CHECK(missing->reason.message.find("GPU 1, GPU 5") != std::string::npos);
    // none measured at all: never FAST
    const auto none = run(10, 10, [](int, Snapshot& s) {
        for (auto& g : s.gpus) g.utilization_pct.reset();
    });
    CHECK(none.label == kLabelUnknown);
}

TEST_CASE("contradictions: Xid 94 (contained ECC, RST: No) says restart the app, not drain the node") {
    // The kernel log source files 94 under GPUd's Fatal class ("critical"); the line itself says better.
    auto verdict_for = [](const std::string& line) {
        return run(6, 10, [line](int i, Snapshot& s) {
            if (i == 3) s.xid_events = {{94, "00000000:0B:00.0", 1, classify_xid(94), line}};
        });
    };
    // The kernel's wording (NVIDIA A100 memory error management guide, "Contained error").
    const auto v = verdict_for("pid=7062, Contained: CE User Channel (0x9). RST: No, D-RST: No");
    REQUIRE(!v.reasons.empty());
    CHECK(v.reasons[0].reason.code == "gpu_xid_app_error");
    CHECK(v.reasons[0].reason.message.find("drain") == std::string::npos);
    CHECK(v.reasons[0].reason.message.find("restart the app") != std::string::npos);
    CHECK(v.reasons[0].reason.message.find("RST: No") != std::string::npos);
    // A reset that is asked for is still critical.
    const auto reset = verdict_for("pid=7062, Contained: SM (0x1). RST: Yes, D-RST: No");
    CHECK(reset.reasons[0].reason.code == "gpu_xid_critical");
}

TEST_CASE("contradictions: a plain sw_power_cap at full clocks is not throttling") {
    const auto v = run(10, 10, [](int, Snapshot& s) {
        for (auto& g : s.gpus) {
            g.throttle_reasons = {"sw_power_cap"};
            g.throttle_reasons_mask = 0x4;
            g.power_w = 690;
        }
    });
    CHECK(v.label == kLabelFast);
    CHECK(v.reasons.empty());
}

TEST_CASE("contradictions: HW thermal slowdown on a 40 s step names the 40 s observed, not 0.12 s") {
    Profiler p;
    for (double t : {0.0, 0.12, 10.0, 20.0, 30.0, 40.0}) {
        Snapshot s = node(t);
        s.gpus[2].throttle_reasons = {"hw_thermal_slowdown"};
        p.observe(std::move(s));
    }
    const auto v = p.verdict();
    const auto* r = find(v, "gpu_hw_thermal_slowdown");
    REQUIRE(r != nullptr);
    INFO(r->reason.message);
    CHECK(r->reason.message.find("0.12 s") == std::string::npos);
    CHECK(r->reason.message.find("of the 40 s observed") != std::string::npos);
    CHECK(v.worst_gpu == "gpu-node-3:GPU 2");  // host:GPU n, not the uuid
}

TEST_CASE("repetition: a node-wide power brake is one reason, not one per GPU") {
    const auto v = run(10, 10, [](int i, Snapshot& s) {
        if (i >= 2)
            for (auto& g : s.gpus) g.throttle_reasons = {"hw_power_brake_slowdown"};
    });
    CHECK(v.label == kLabelSlow);
    int brakes = 0;
    for (const auto& r : v.reasons) brakes += r.reason.code == "gpu_power_brake";
    CHECK(brakes == 1);
    CHECK(v.reasons[0].reason.subject == "gpus");
    CHECK(v.reasons[0].reason.message.find("all 8 GPUs") != std::string::npos);
}

TEST_CASE("repetition: nccl_rank_missing needs the same rank missing in two consecutive RAS polls") {
    auto poll = [](double t, std::vector<int> missing) {
        NcclRasReport r;
        r.time = t;
        r.outcome = "ok";
        NcclCommunicator c;
        c.hash = "27a079b828ff1a75";
        c.size = 16;
        c.ranks_answered = 16 - static_cast<int>(missing.size());
        c.status = "RUNNING";
        for (int rank : missing) c.missing.push_back({{rank, "10.0.0.4", 1234, "3"}, false, true});
        r.communicators.push_back(c);
        return r;
    };
    auto codes_after = [&](std::vector<std::vector<int>> polls) {
        Profiler p;
        for (size_t i = 0; i < polls.size(); ++i) {
            Snapshot s = node(static_cast<double>(i) * 60);
            s.nccl.ras.push_back(poll(s.time, polls[i]));
            p.observe(std::move(s));
        }
        const StepVerdict v = p.verdict();
        return find(v, "nccl_rank_missing") != nullptr;
    };
    CHECK_FALSE(codes_after({{}, {13}, {}}));        // one poll: a rank busy in a long kernel
    CHECK_FALSE(codes_after({{13}, {}, {13}, {}}));  // not consecutive
    CHECK(codes_after({{}, {13}, {13}}));            // two in a row: hung or unreachable
}

TEST_CASE("repetition: RAS peers are named by host when a log line or Inspector record tells") {
    Profiler p;
    for (int i = 0; i < 3; ++i) {
        Snapshot s = node(i * 60.0);
        NcclRasReport r;
        r.time = s.time;
        r.outcome = "ok";
        NcclCommunicator c;
        c.hash = "27a079b828ff1a75";
        c.size = 16;
        c.status = "RUNNING";
        c.missing.push_back({{13, "10.0.0.4", 1234, "3"}, false, true});
        r.communicators.push_back(c);
        s.nccl.ras.push_back(r);
        if (i == 0) {
            NcclLogEvent e;
            e.kind = "nccl_warn";
            e.host = "gpu-node-4";
            e.pid = 1234;
            e.rank = 13;
            s.nccl.log_events.push_back(e);
        }
        p.observe(std::move(s));
    }
    const StepVerdict v = p.verdict();
    const auto* r = find(v, "nccl_rank_missing");
    REQUIRE(r != nullptr);
    CHECK(r->reason.message.find("rank 13 on gpu-node-4") != std::string::npos);
    // without anything naming the host, the IP stays (no DNS: a replay must give the same verdict)
    NcclPeerNames unnamed;
    CHECK(unnamed.host_of({13, "10.0.0.4", 1234, "3"}, "27a079b828ff1a75").empty());
}

// The rule vocabulary (rule_descriptor.h): each code described once, found by its code, with the causal
// ranks and symptoms the verdict orders reasons by.
TEST_CASE("rule catalog: every code is described once and found by its code") {
    const auto all = rule_catalog();
    REQUIRE(all.size() >= 60);
    std::set<std::string_view> codes;
    for (const RuleDescriptor* d : all) {
        CHECK_MESSAGE(codes.insert(d->code).second, d->code);
        CHECK(find_rule(d->code) == d);
    }
    CHECK(find_rule("node_straggler") == nullptr);  // a job-level reason: no rule emits it
    CHECK(causal_rank("node_straggler") == kMiddleRank);
    CHECK_FALSE(is_symptom("node_straggler"));
}

TEST_CASE("rule catalog: causes rank upstream of what they cause; the four GPU symptoms sort last") {
    CHECK(causal_rank("collector_failed") < causal_rank("gpu_xid_critical"));
    CHECK(causal_rank("fabric_port_down") < causal_rank("fabric_packet_loss"));
    CHECK(causal_rank("fabric_packet_loss") < causal_rank("fabric_congestion"));
    CHECK(causal_rank("gpu_thermal_throttle") < causal_rank("gpu_low_utilization"));
    // A link that trained down is a PCIe link cause beside the replays, before any clock or host reason.
    CHECK(causal_rank("gpu_pcie_link_degraded") == causal_rank("gpu_pcie_replay") + 1);
    CHECK(causal_rank("gpu_pcie_link_degraded") < causal_rank("gpu_power_brake"));
    std::set<std::string_view> symptoms;
    for (const RuleDescriptor* d : rule_catalog())
        if (d->role == Role::kSymptom) symptoms.insert(d->code);
    CHECK(symptoms == std::set<std::string_view>{"gpu_idle", "gpu_low_sm_activity", "gpu_low_utilization",
                                                 "gpu_straggler"});
}

TEST_CASE("vocabulary: every label, severity, category and hint reads back from its name") {
    for (const Label v : {Label::kFast, Label::kUnknown, Label::kSlow, Label::kFailRisk})
        CHECK(label_from_string(to_string(v)) == v);
    for (const Severity v : {Severity::kInfo, Severity::kWarning, Severity::kCritical})
        CHECK(severity_from_string(to_string(v)) == v);
    for (const Category v : {Category::kGpu, Category::kFabric, Category::kNetwork, Category::kSystem,
                             Category::kProfiler, Category::kTelemetry, Category::kNccl})
        CHECK(category_from_string(to_string(v)) == v);
    for (const Hint v : {Hint::kNone, Hint::kCompute, Hint::kNetwork, Hint::kMemory, Hint::kInput})
        CHECK(hint_from_string(to_string(v)) == v);
    CHECK(to_string(Label::kFailRisk) == kLabelFailRisk);
    CHECK_FALSE(label_from_string("BROKEN"));
    CHECK(label_rank(Label::kFailRisk) > label_rank(Label::kSlow));
    CHECK(label_rank(Label::kSlow) > label_rank(Label::kUnknown));
    CHECK(label_rank(Label::kUnknown) > label_rank(Label::kFast));
}
