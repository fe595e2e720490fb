// `stallscope report` on a recorded 4-node job (fixtures/timelines/job-4242, see make_multinode_job.py).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/timeline/job_comment.h"
#include "tests/cli/fixture_env.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::run_process;

namespace {
const std::string kJobDir = std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4242";
}

TEST_CASE("report on a 4-node job names the straggler node, the worst port and the worst node") {
    const auto r = run_process({STALLSCOPE_EXE, "report", kJobDir, "--json"});
    REQUIRE(r.exit_code == 0);
    const Json j = Json::parse(r.out);
    CHECK(j["job_id"] == "4242");
    CHECK(j["user"] == "alice");
    CHECK(j["nodes"].size() == 4);
    CHECK(j["gpus"].size() == 32);
    CHECK(j["straggler_node"] == "gpu-node-03");
    CHECK(j["worst_port"] == "gpu-node-02:mlx5_3/1");
    CHECK(j["worst_node"] == "gpu-node-02");
    CHECK(j["straggler_gpu"] == "");  // the whole node is slow, not one GPU of it
    const Json& v = j["verdict"];
    CHECK(v["label"] == "FAIL_RISK");
    REQUIRE(v["reasons"].size() >= 3);
    CHECK(v["reasons"][0]["code"] == "fabric_packet_loss");
    CHECK(v["reasons"][0]["subject"] == "gpu-node-02:mlx5_3/1");
    bool straggler_reason = false;
    for (const auto& reason : v["reasons"])
        straggler_reason = straggler_reason || reason["code"] == "node_straggler";
    CHECK(straggler_reason);
    // The per-port table carries the numbers behind it.
    bool found_port = false;
    for (const auto& p : j["ports"])
        if (p["host"] == "gpu-node-02" && p["port"] == "mlx5_3/1") {
            found_port = true;
            CHECK(p["pause_occupancy"] == doctest::Approx(0.30).epsilon(0.001));
            CHECK(p["loss_per_million_packets"] == doctest::Approx(225).epsilon(0.001));
        }
    CHECK(found_port);
}

TEST_CASE("the text report reads like jobstats: header, verdict, notes, per-GPU bars, per-port table") {
    const auto r = run_process({STALLSCOPE_EXE, "report", kJobDir});
    REQUIRE(r.exit_code == 0);
    for (const char* text :
         {"Job 4242 (llama-70b-pretrain) user alice: 4 node(s), 1 step(s), 32 GPU(s) measured",
          "Verdict: FAIL_RISK", "PFC pause occupancy 30 % on mlx5_3/1 (gpu-node-02)",
          "straggler node: gpu-node-03", "####", "Fabric ports:", "worst port: gpu-node-02:mlx5_3/1"})
        CHECK_MESSAGE(r.out.find(text) != std::string::npos, text);
}

TEST_CASE("a healthy single node gives no straggler and no notes") {
    const auto r =
        run_process({STALLSCOPE_EXE, "report", kJobDir + "/timeline.0.gpu-node-01.jsonl", "--json"});
    REQUIRE(r.exit_code == 0);
    const Json j = Json::parse(r.out);
    CHECK(j["verdict"]["label"] == "FAST");
    CHECK(j["straggler_node"] == "");
    CHECK(j["notes"].empty());
}

TEST_CASE("report on a directory without timelines fails with a clear message") {
    const auto r = run_process({STALLSCOPE_EXE, "report", std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("no verdict.*.json or timeline.*.jsonl files") != std::string::npos);
}

TEST_CASE("a timeline without its verdict line (helper killed mid-step) makes the job UNKNOWN, named") {
    // The helper's timeline up to the kill: every flushed sample, no verdict line.
    std::ifstream in(kJobDir + "/timeline.0.gpu-node-01.jsonl");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() > 3);
    REQUIRE(lines.back().find("\"type\":\"verdict\"") != std::string::npos);
    char dir[] = "/tmp/stallscope-report-test.XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string cut = std::string(dir) + "/timeline.0.gpu-node-01.jsonl";
    {
        std::ofstream out(cut);
        for (std::size_t i = 0; i + 1 < lines.size(); ++i) out << lines[i] << "\n";
    }
    const auto r = run_process({STALLSCOPE_EXE, "report", dir, "--json"});
    std::remove(cut.c_str());
    rmdir(dir);
    REQUIRE(r.exit_code == 0);
    const Json j = Json::parse(r.out);
    CHECK(j["verdict"]["label"] == "UNKNOWN");
    CHECK(j["verdict"]["unknown_reasons"] == Json::array({"recording_incomplete"}));
    REQUIRE(j["verdict"]["reasons"].size() == 1);
    const Json& reason = j["verdict"]["reasons"][0];
    CHECK(reason["code"] == "recording_incomplete");
    CHECK(reason["subject"] == "gpu-node-01");
    CHECK(reason["message"].get<std::string>().find("30 samples it flushed (up to 2026-11-22T05:04:50") !=
          std::string::npos);
}

TEST_CASE("report --rules re-profiles every node with other thresholds, the same on 1 thread or 4") {
    const std::string rules = stallscope::test::make_temp_dir("rules") + "/lenient.conf";
    std::ofstream(rules) << "# loss is FAIL_RISK only from 1000 per million packets\n"
                            "rdma_loss_fail_per_mpkt = 1000\n";
    const auto as_recorded = run_process({STALLSCOPE_EXE, "report", kJobDir, "--json"});
    const auto one =
        run_process({STALLSCOPE_EXE, "report", kJobDir, "--rules", rules, "--json", "--jobs", "1"});
    const auto four =
        run_process({STALLSCOPE_EXE, "report", kJobDir, "--rules", rules, "--json", "--jobs", "4"});
    REQUIRE(as_recorded.exit_code == 0);
    REQUIRE(one.exit_code == 0);
    REQUIRE(four.exit_code == 0);
    CHECK(one.out == four.out);
    const Json before = Json::parse(as_recorded.out), after = Json::parse(one.out);
    CHECK(before["verdict"]["label"] == "FAIL_RISK");
    CHECK(after["verdict"]["label"] == "SLOW");  // 225 lost per million: SLOW under the lenient file
    bool loss_slow = false;
    for (const auto& reason : after["verdict"]["reasons"])
        loss_slow = loss_slow || (reason["code"] == "fabric_packet_loss" && reason["label"] == "SLOW");
    CHECK_MESSAGE(loss_slow, after["verdict"]["reasons"].dump());
    CHECK(after["straggler_node"] == before["straggler_node"]);

    const auto bad = run_process({STALLSCOPE_EXE, "report", kJobDir, "--rules", "/nonexistent.conf"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("/nonexistent.conf") != std::string::npos);
}

TEST_CASE("report --rules on a node with a verdict but no timeline keeps its verdict and says so") {
    const std::string dir = stallscope::test::make_temp_dir("rules-notl") + "/stallscope-4242";
    auto env = stallscope::test::fixture_node_env("vm");
    env.push_back("SLURM_STEP_ID=0");
    REQUIRE(
        run_process(
            {STALLSCOPE_EXE, "record", "--out-dir", dir, "--interval-seconds", "0.05", "--count", "2"}, env)
            .exit_code == 0);
    REQUIRE(run_process({"/bin/sh", "-c", "rm " + dir + "/timeline.*"}).exit_code == 0);
    const std::string rules = dir + "/../strict.conf";
    std::ofstream(rules) << "gpu_util_low_pct = 99\n";
    const auto r = run_process({STALLSCOPE_EXE, "report", dir, "--rules", rules, "--json"});
    REQUIRE(r.exit_code == 0);
    const Json j = Json::parse(r.out);
    CHECK(j["nodes"].size() == 1);
    bool said = false;
    for (const auto& w : j["warnings"])
        said =
            said || w.get<std::string>().find("no timeline to re-profile with --rules") != std::string::npos;
    CHECK_MESSAGE(said, j["warnings"].dump());
}

TEST_CASE("report --comment prints the job segment the writer composes, for the post-job epilog") {
    // job-4343: 8 nodes, two without a verdict (node-06, node-08), packet loss on node-02.
    const std::string fixture = std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4343";
    const std::string dir = stallscope::test::make_temp_dir("comment") + "/stallscope-4343";
    REQUIRE(run_process({"/bin/cp", "-r", fixture, dir}).exit_code == 0);
    auto r = run_process({STALLSCOPE_EXE, "report", "--comment", dir});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out ==
          "stallscope/1 FAIL_RISK conf=0.94 top=fabric_packet_loss:node-02:mlx5_3/1 nodes=8 "
          "missing=node-06,node-08 stragglers=node-05,node-07 gpus=40 dur=650 node=node-02 file=" +
              dir + "\n");
    // What `stallscope jobs` reads back from AdminComment: the merged verdict, its root cause named.
    const auto segment = parse_comment_segment(r.out);
    REQUIRE(segment);
    CHECK(segment->label == "FAIL_RISK");
    CHECK(segment->top == "fabric_packet_loss:node-02:mlx5_3/1");
    CHECK(segment->nodes == 8);
    CHECK(segment->missing == std::vector<std::string>{"node-06", "node-08"});
    // Once the job's summary exists, file= points at it, as the writer's segment does.
    std::ofstream(dir + "/summary.json") << "{}\n";
    r = run_process({STALLSCOPE_EXE, "report", dir, "--comment"});
    CHECK(r.out.find(" file=" + dir + "/summary.json\n") != std::string::npos);
    // Only the segment: combined with another view it is a usage error, not a silent choice.
    CHECK(run_process({STALLSCOPE_EXE, "report", dir, "--comment", "--json"}).exit_code == 2);
}
