#include "libstallscope/rules/host_rules.h"

#include <doctest/doctest.h>

#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

TEST_CASE("PSI memory full above the threshold is memory pressure; IO and CPU pressure likewise") {
    Snapshot s = at(0);
    s.host_stats.psi.memory_full_avg10 = 25;
    s.host_stats.psi.io_full_avg10 = 1;
    s.host_stats.psi.cpu_some_avg10 = 75;
    auto out = run_one(host_pressure_rule, s);
    REQUIRE(out.size() == 2);
    CHECK(out[0].reason.code == "host_memory_pressure");
    CHECK(out[0].hint == Hint::kMemory);
    CHECK(out[1].reason.code == "host_cpu_pressure");
}

TEST_CASE("available memory below 5 % of total is SLOW") {
    Snapshot s = at(0);
    s.host_stats.mem_total_bytes = 1000;
    s.host_stats.mem_available_bytes = 30;
    auto out = run_one(host_memory_low_rule, s);
    REQUIRE(out.size() == 1);
    CHECK(num(out[0], "mem_available_pct") == doctest::Approx(3));
    s.host_stats.mem_available_bytes = 400;
    CHECK(run_one(host_memory_low_rule, s).empty());
}

TEST_CASE("an OOM kill during the step is FAIL_RISK; the lifetime count alone is not") {
    Snapshot a = at(0), b = at(10);
    a.host_stats.oom_kills = 7;
    b.host_stats.oom_kills = 7;
    CHECK(run_pair(host_oom_rule, a, b).empty());
    CHECK(run_one(host_oom_rule, b).empty());
    b.host_stats.oom_kills = 8;
    auto out = run_pair(host_oom_rule, a, b);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "host_oom_kill");
    CHECK(out[0].reason.label == kLabelFailRisk);
}

TEST_CASE("blocked processes must persist for N samples") {
    std::vector<Snapshot> series;
    for (int i = 0; i < 5; ++i) {
        series.push_back(at(i));
        series.back().host_stats.procs_blocked = 20;
    }
    BlockedProcessesRule rule;
    CHECK(run_series(rule, series).size() == 1);
    BlockedProcessesRule brief;
    series[2].host_stats.procs_blocked = 0;
    CHECK(run_series(brief, series).empty());
}

TEST_CASE("a collector failure is a telemetry reason pushing UNKNOWN, naming the collector") {
    Snapshot s = at(0);
    s.collector_failures["nvml"] = "timeout after 2 s";
    auto out = run_one(collector_failure_rule, s);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "collector_failed");
    CHECK(out[0].reason.category == "telemetry");
    CHECK(out[0].reason.label == kLabelUnknown);
    CHECK(out[0].reason.subject == "nvml");
}

TEST_CASE("RDMA counters that moved and then froze while samples kept coming are stale telemetry") {
    std::vector<Snapshot> series;
    for (int i = 0; i < 10; ++i) {
        Snapshot s = at(i * 30);
        const std::uint64_t v = i < 3 ? 1000 * i : 2000;  // moves, then frozen from t=60
        s.rdma.push_back(port("mlx5_0", counters({{"rp_cnp_handled", 0}}), counters({{"port_rcv_data", v}})));
        series.push_back(s);
    }
    StaleTelemetryRule rule;
    auto out = run_series(rule, series);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "telemetry_stale");
    CHECK(out[0].reason.label == kLabelUnknown);
    CHECK(out[0].since == 60);
    // a port that never moved in the step (unused) is not stale
    for (auto& s : series) s.rdma[0].counters["port_rcv_data"] = 5;
    StaleTelemetryRule quiet;
    CHECK(run_series(quiet, series).empty());
}

// The rule compares every RDMA counter with its value last sample (from the maps, or from the
// profiler's flat copy): one counter moving anywhere, or turning unreadable, is a change.
TEST_CASE("Stale RDMA telemetry: any one counter that moves or turns null restarts the frozen time") {
    auto sample = [](int i) {
        Snapshot s = at(i * 30);
        const std::uint64_t last = i < 3 ? 1000 * i : 2000;  // moves, then frozen from t=60
        s.rdma.push_back(port("mlx5_0", counters({{"a", 1}, {"b", 2}}), counters({{"c", 3}})));
        s.rdma.push_back(port("mlx5_1", counters({{"d", 4}, {"e", 5}}), counters({{"f", 6}, {"g", last}})));
        if (i >= 6) s.rdma[0].hw_counters["b"].reset();  // from t=180 unreadable: a change, then frozen
        return s;
    };
    for (const bool flat : {false, true}) {
        CAPTURE(flat);
        StaleTelemetryRule rule;
        Findings out;
        std::vector<double> since;  // when the stale reason says the counters froze, sample by sample
        for (int i = 0; i < 14; ++i) {
            const Snapshot s = sample(i);
            std::vector<Counter> values;  // what RatesTracker::rdma_values holds: ports, maps, names
            for (const RdmaPort& p : s.rdma)
                for (const CounterMap* m : {&p.counters, &p.hw_counters})
                    for (const auto& [name, c] : *m) values.push_back(c);
            const Thresholds t;
            RuleInput in{s, nullptr, nullptr, t};
            if (flat) in.rdma_values = std::span<const Counter>(values);
            out.clear();
            rule.evaluate(in, out);
            since.push_back(out.empty() ? -1 : out[0].since);
        }
        // Frozen from 60: stale from 180 (120 s) -- but at 180 "b" turned null, so frozen again from
        // 180 and stale from 300 (t = 300, sample 10) on.
        CHECK(since == std::vector<double>{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 180, 180, 180, 180});
    }
}

// Memory pressure, low memory, blocked processes and missing GPU telemetry fire every sample while their
// condition lasts and are written into kept slots (Findings::add): their whole text and evidence, pinned
// as make_finding wrote them, sample after sample into the same Findings.
TEST_CASE("host and GPU telemetry findings: whole message and evidence, sample after sample") {
    BlockedProcessesRule blocked;
    Findings out;
    for (int i = 0; i < 6; ++i) {
        CAPTURE(i);
        Snapshot s = at(1000 + i * 10);
        s.host_stats.psi.memory_full_avg10 = 25 + i;
        s.host_stats.mem_total_bytes = 1000;
        s.host_stats.mem_available_bytes = 30;
        s.host_stats.procs_blocked = 40;
        s.context.gpus = {"0", "1", "2", "3"};
        s.gpus = {gpu(0, 90), gpu(1, 90)};
        s.gpus[1].utilization_pct.reset();
        s.warnings = {"nvidia-smi not found", "NVML: GPU 1 Not Supported for utilization"};
        const RuleInput in{s, nullptr, nullptr, Thresholds{}};
        out.clear();
        host_pressure_rule(in, out);
        host_memory_low_rule(in, out);
        blocked.evaluate(in, out);
        gpu_telemetry_rule(in, out);
        REQUIRE(out.size() == (i >= 4 ? 4u : 3u));  // blocked from the 5th sample on
        CHECK(out[0].reason.message ==
              "host: " + std::to_string(25 + i) +
                  " % of the time all tasks stalled on memory (PSI memory full avg10) — "
                  "reclaim/swap is slowing the step (threshold 10 %)");
        CHECK(evidence_text(out[0].reason.evidence) ==
              "avg10_pct=" + std::to_string(25 + i) + ";threshold_pct=10;");
        CHECK(out[1].reason.message ==
              "host: only 3 % of memory available (threshold 5 %) — OOM kills are next");
        CHECK(evidence_text(out[1].reason.evidence) ==
              "mem_available_bytes=30;mem_available_pct=3;threshold_pct=5;");
        const Finding& telemetry = out.back();
        CHECK(telemetry.reason.message ==
              "GPUs measured: 1 of 4 allocated — 2 allocated GPU(s) not visible to the GPU collector; no "
              "utilization for GPU 1 (nvidia-smi not found); the verdict covers only the measured GPUs");
        CHECK(evidence_text(telemetry.reason.evidence) ==
              "collector_warning=nvidia-smi not "
              "found;gpus_allocated=4;gpus_measured=1;gpus_seen=2;unmeasured_gpus="
              "GPU 1;");
        CHECK(telemetry.reason.label == kLabelFast);
        if (i >= 4) {
            CHECK(out[2].reason.message == "host: 40 processes in uninterruptible sleep (D state) for " +
                                               std::to_string(i + 1) +
                                               " samples (threshold 8) — a filesystem or device is hanging");
            CHECK(evidence_text(out[2].reason.evidence) ==
                  "procs_blocked=40;samples=" + std::to_string(i + 1) + ";threshold=8;");
            CHECK(out[2].since == 1000);
        }
    }
    // A long collector warning: cut to 157 characters and "..." in the message, 200 in the evidence.
    Snapshot s = at(0);
    s.context.gpus = {"0"};
    s.warnings = {"NVML: " + std::string(300, 'x')};
    out.clear();
    gpu_telemetry_rule(RuleInput{s, nullptr, nullptr, Thresholds{}}, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.label == kLabelUnknown);
    CHECK(out[0].reason.message ==
          "GPUs measured: 0 of 1 allocated — 1 allocated GPU(s) not visible to the GPU "
          "collector (NVML: " +
              std::string(151, 'x') + "...); no verdict on the GPUs");
    CHECK(std::get<std::string>(out[0].reason.evidence.at("collector_warning")) ==
          "NVML: " + std::string(194, 'x'));
}
