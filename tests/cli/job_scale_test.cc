// A 300-node job dir made of verdict files cloned from fixtures/timelines/job-4343 (the full 1 000-node
// figures are bench/job_scale's): the default report stays a screen long, groups the faulty nodes into
// one reason line and still names every straggler.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::kJob4343;
using stallscope::test::run_process;
namespace fs = std::filesystem;

namespace {

Json read_json_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return Json::parse(s.str());
}

std::string host_name(int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "h-%04d", i);
    return buf;
}

// Hosts 1..300: every 4th from 1 a straggler (75), every 5th from 2 the faulty port (60), 300 without
// a verdict (an empty timeline).
void write_job(const std::string& dir) {
    const Json healthy = read_json_file(kJob4343 + "/verdict.0.node-01.json");
    const Json faulty = read_json_file(kJob4343 + "/verdict.0.node-02.json");
    for (int i = 1; i <= 300; ++i) {
        const std::string host = host_name(i);
        if (i == 300) {
            std::ofstream(dir + "/timeline.0." + host + ".jsonl").close();
            continue;
        }
        Json v = (i % 5 == 2) ? faulty : healthy;
        v["host"] = host;
        if (i % 4 == 1) {
            for (auto& g : v["node_stats"]["gpus"]) g["mean_util_pct"] = 35.0 + i % 7;
            v["node_stats"]["mean_gpu_util_pct"] = 35.0 + i % 7;
        }
        std::ofstream(dir + "/verdict.0." + host + ".json") << v.dump();
    }
}

}  // namespace

TEST_CASE("a 300-node job: one screen, faulty nodes grouped into one line, every straggler named") {
    char tmpl[] = "/tmp/stallscope-scale-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    write_job(dir);
    const auto text = run_process({STALLSCOPE_EXE, "report", dir});
    const auto json = run_process({STALLSCOPE_EXE, "report", dir, "--json"});
    const auto top3 = run_process({STALLSCOPE_EXE, "report", dir, "--top", "3"});
    fs::remove_all(dir);
    REQUIRE(text.exit_code == 0);
    REQUIRE(json.exit_code == 0);
    const auto lines = static_cast<std::size_t>(std::count(text.out.begin(), text.out.end(), '\n'));
    CHECK(lines <= 80);
    for (const char* want :
         {"Job 4343 (bert\\x1b[2Jlarge) user bob: 300 node(s), 1 step(s)",
          "1. 60 nodes: fabric_packet_loss on mlx5_3/1 [FAIL_RISK]: h-[0002,0007,0012,",
          "75 nodes: node_straggler [SLOW]", "Straggler nodes (75,",
          "Nodes without a verdict (1, recording_incomplete): h-0300",
          "Nodes (worst 10 of 300 recordings; --node HOST for one node, --all for every node):"})
        CHECK_MESSAGE(text.out.find(want) != std::string::npos, want);
    // Every straggler is named in the straggler section (a compressed host list, wrapped).
    const auto from = text.out.find("Straggler nodes (75,");
    const auto to = text.out.find("\n\n", from);
    REQUIRE(from != std::string::npos);
    const std::string section = text.out.substr(from, to - from);
    for (int i = 1; i < 300; i += 4) {
        char number[8];
        std::snprintf(number, sizeof number, "%04d", i);
        CHECK_MESSAGE(section.find(number) != std::string::npos, number);
    }
    CHECK(top3.out.find("Nodes (worst 3 of 300 recordings;") != std::string::npos);
    const Json j = Json::parse(json.out);
    CHECK(j["straggler_nodes"].size() == 75);
    CHECK(j["missing_nodes"] == Json::array({"h-0300"}));
    CHECK(j["host_count"] == 300);
    CHECK(j["verdict"]["label"] == "FAIL_RISK");
    CHECK(j["verdict"]["reasons"][0]["code"] == "fabric_packet_loss");
    std::set<std::string> slow_rows;
    for (const auto& n : j["nodes"])
        if (n["label"] == "SLOW") slow_rows.insert(n["host"].get<std::string>());
    CHECK(slow_rows.size() >= 60);  // stragglers that are not also faulty read SLOW, not FAST
}
