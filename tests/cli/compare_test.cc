// `stallscope compare` decides first whether B is slower from what was measured (step durations; NCCL's
// bus bandwidth where both have it), then explains (audit 2026-11-27 findings 2, 3, 4, 13, 30).
#include <doctest/doctest.h>

#include <fstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/cli/scenario_run.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::kJob4242;
using stallscope::test::kJob4343;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;
using stallscope::test::ScenarioRun;
using stallscope::test::write_scenario_run;

namespace {

std::string run_dir(const char* tag, const ScenarioRun& run) {
    const std::string dir = make_temp_dir(tag);
    write_scenario_run(dir, run);
    return dir;
}

Json compare_json(const std::string& a, const std::string& b) {
    const auto r = run_process({STALLSCOPE_EXE, "compare", a, b, "--json"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return Json::parse(r.out);
}

bool starts_with(const Json& text, const std::string& prefix) {
    return text.get<std::string>().rfind(prefix, 0) == 0;
}

bool mentions(const Json& j, const std::string& what) {
    return j["because"].get<std::string>().find(what) != std::string::npos ||
           j["evidence"].get<std::string>().find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("compare: a FAST A and a SLOW B that took longer: B is slower, and why") {
    const std::string a = run_dir("cmp-fast-a", {"healthy_baseline"});
    const std::string b = run_dir("cmp-slow-b", {"thermal_throttle", 2.0});
    const Json j = compare_json(a, b);
    CHECK(j["speed"]["b_against_a"] == "slower");
    CHECK(j["speed"]["basis"] == "step_durations");
    CHECK(j["speed"]["a"] == 80);
    CHECK(j["speed"]["b"] == 160);
    CHECK(starts_with(j["because"], "B is slower than A because gpu_thermal_throttle fired in B"));
    const auto text = run_process({STALLSCOPE_EXE, "compare", a, b});
    CHECK(text.out.find("  measured: step(s) 0 took 80 s in A and 160 s in B (+100 %)") != std::string::npos);
}

TEST_CASE("compare: a SLOW A and a FAST B that took less time: B is not slower") {
    const std::string a = run_dir("cmp-slow-a", {"thermal_throttle", 2.0});
    const std::string b = run_dir("cmp-fast-b", {"healthy_baseline"});
    const Json j = compare_json(a, b);
    CHECK(j["speed"]["b_against_a"] == "faster");
    CHECK(starts_with(j["because"], "B is not slower than A: it is faster"));
    CHECK_FALSE(mentions(j, "B is slower"));
}

TEST_CASE("compare: a node without RDMA traffic or ports is not a slowdown") {
    // B: a FAST run as long as job-4242's step (290 s), on ports that moved nothing (audit finding 3:
    // "B is slower because RDMA traffic per node fell from 32 Gbit/s in A to 0 Gbit/s in B") ...
    ScenarioRun idle_ports{"healthy_baseline", 290.0 / 80};
    Json first_rdma;
    idle_ports.edit = [&](Json& s) {
        if (first_rdma.is_null()) first_rdma = s["rdma"];
        s["rdma"] = first_rdma;  // counters frozen at the first sample
    };
    // ... and on a node without any RDMA port.
    ScenarioRun no_ports{"healthy_baseline", 290.0 / 80};
    no_ports.edit = [](Json& s) { s.erase("rdma"); };
    for (const ScenarioRun& run : {idle_ports, no_ports}) {
        const Json j = compare_json(kJob4242, run_dir("cmp-rdma", run));
        CHECK(j["speed"]["b_against_a"] == "same");
        CHECK(starts_with(j["because"], "B is as fast as A"));
        CHECK_FALSE(mentions(j, "slower because"));
        for (const auto& m : j["metrics"])
            if (m["key"] == "fabric_gbps_per_node") CHECK(m["worse_in_b"] == false);
    }
}

TEST_CASE("compare: two equal runs are equal") {
    const Json j = compare_json(kJob4242, kJob4242);
    CHECK(j["speed"]["b_against_a"] == "same");
    CHECK(j["speed"]["relative"] == 0);
    CHECK(starts_with(j["because"], "B is as fast as A"));
    for (const auto& m : j["metrics"]) CHECK(m["worse_in_b"] == false);
}

TEST_CASE("compare: a gap in B's data is never the cause; job-controlled text is escaped; nodes are hosts") {
    const Json j = compare_json(kJob4242, kJob4343);
    CHECK_FALSE(mentions(j, "recording_incomplete"));
    CHECK_FALSE(mentions(j, "telemetry"));
    CHECK(j["b"]["nodes"] == 8);  // 8 hosts, 11 recordings (host x step)
    const auto text = run_process({STALLSCOPE_EXE, "compare", kJob4242, kJob4343});
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find('\x1b') == std::string::npos);  // the job name holds ESC [2J
    CHECK(text.out.find("bert\\x1b[2Jlarge") != std::string::npos);
    CHECK(text.out.find("8 node(s)") != std::string::npos);
    // The table's titles sit over their numbers (right-aligned columns, one format).
    const auto header = text.out.find("  metric (mean over the step)");
    REQUIRE(header != std::string::npos);
    const std::string head_line = text.out.substr(header, text.out.find('\n', header) - header);
    const auto util = text.out.find("  GPU utilization %");
    const std::string util_line = text.out.substr(util, text.out.find('\n', util) - util);
    const auto a_column = head_line.find(" A ") + 1, delta_end = head_line.find("delta") + 4;
    REQUIRE(util_line.size() > delta_end);
    CHECK(util_line[a_column] != ' ');  // A's number ends under "A"
    CHECK(util_line[a_column + 1] == ' ');
    CHECK(util_line[delta_end] != ' ');  // the delta ends under "delta"
}

TEST_CASE("compare: garbage or another schema as A or B is an error (exit 1, on stderr)") {
    const std::string dir = make_temp_dir("cmp-garbage");
    { std::ofstream(dir + "/garbage.jsonl.zst") << "\x28\xb5\x2f\xfd garbage, not zstd"; }
    { std::ofstream(dir + "/other.jsonl") << "{\"schema\":\"something.else/1\",\"x\":1}\n"; }
    for (const char* name : {"/garbage.jsonl.zst", "/other.jsonl"}) {
        const auto r = run_process({STALLSCOPE_EXE, "compare", dir + name, kJob4242});
        CHECK_MESSAGE(r.exit_code == 1, name);
        CHECK(r.err.find("no readable timeline") != std::string::npos);
        CHECK(r.out.empty());
    }
}

TEST_CASE("compare: a job id whose AdminComment file= is the job directory reads that directory") {
    // Audit finding 8: the parent of file= was taken, so a directory (the epilog's file=) missed.
    const std::string sacct = std::string(STALLSCOPE_SOURCE_DIR) + "/tests/cli/fake_sacct.py";
    const auto r = run_process({STALLSCOPE_EXE, "compare", kJob4242, "105", "--sacct", sacct, "--json"},
                               {"FAKE_SACCT_JOB_DIR=" + kJob4242});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(Json::parse(r.out)["b"]["job_id"] == "4242");
    CHECK(r.err.find("reading " + kJob4242 + " (") != std::string::npos);
}
