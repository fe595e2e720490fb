// `replay` says what differs from the recorded verdict, not only that it does (audit 2026-11-27 finding
// 17): labels, confidences, the reasons added and removed, the recording's version and thresholds.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;

namespace {

const std::string kNode02 =
    std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4242/timeline.0.gpu-node-02.jsonl";

// job-4242's gpu-node-02 (FAIL_RISK: fabric_packet_loss, pfc_fabric_backpressure) as an older helper
// might have recorded it: version 0.0.9, SLOW 0.50, packet loss not found, a thermal reason instead, another
// bottleneck, and without the gpus_measured field.
std::string older_recording() {
    std::ifstream in(kNode02);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    Json header = Json::parse(lines.front());
    header["stallscope_version"] = "0.0.9";
    lines.front() = header.dump();
    Json verdict = Json::parse(lines.back());
    verdict["label"] = "SLOW";
    verdict["confidence"] = 0.5;
    verdict["reasons"].erase(0);  // fabric_packet_loss@mlx5_3/1
    verdict["reasons"].push_back({{"code", "gpu_thermal_throttle"}, {"subject", "GPU-1"}});
    verdict["bottleneck_hint"] = "compute";
    verdict.erase("gpus_measured");
    lines.back() = verdict.dump();
    const std::string path = make_temp_dir("replay-diff") + "/timeline.0.gpu-node-02.jsonl";
    std::ofstream out(path);
    for (const auto& line : lines) out << line << "\n";
    return path;
}

}  // namespace

TEST_CASE("replay of a recording whose verdict differs names the labels, reasons and the recording version") {
    const std::string path = older_recording();
    const auto r = run_process({STALLSCOPE_EXE, "replay", path});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto has = [&](const std::string& what) { return r.out.find(what) != std::string::npos; };
    CHECK_MESSAGE(has("differs from the recorded verdict: recorded SLOW 0.50, replayed FAIL_RISK 0.94\n"),
                  r.out);
    CHECK(has("    reasons only in the replay: fabric_packet_loss@mlx5_3/1\n"));
    CHECK(has("    reasons only in the recording: gpu_thermal_throttle@GPU-1\n"));
    CHECK(has("    also differ: bottleneck_hint\n"));
    CHECK(has("    not in the recording (added to verdicts since): gpus_measured\n"));
    CHECK(has("recorded by stallscope 0.0.9, replayed by "));
    CHECK(has("the rules or their defaults changed since the recording"));
    CHECK_FALSE(has("other thresholds, or another stallscope version?"));

    const auto j = run_process({STALLSCOPE_EXE, "replay", path, "--json", "--rules", "/dev/null"});
    REQUIRE_MESSAGE(j.exit_code == 0, j.err);
    const Json d = Json::parse(j.out)["recorded_difference"];
    CHECK(d["recorded_label"] == "SLOW");
    CHECK(d["recorded_version"] == "0.0.9");
    CHECK(d["reasons_added"] == Json::array({"fabric_packet_loss@mlx5_3/1"}));
    CHECK(d["reasons_removed"] == Json::array({"gpu_thermal_throttle@GPU-1"}));
    CHECK(d["thresholds"] == "rules");
}

TEST_CASE("replay of a recording that matches says so and nothing more") {
    const auto r = run_process({STALLSCOPE_EXE, "replay", kNode02});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("  matches the recorded verdict\n") != std::string::npos);
    CHECK(r.out.find("differs") == std::string::npos);
    const auto j = run_process({STALLSCOPE_EXE, "replay", kNode02, "--json"});
    CHECK_FALSE(Json::parse(j.out).contains("recorded_difference"));
}

TEST_CASE("every fixture timeline that ends with a verdict replays to it (fixtures not stale)") {
    // job-4343's verdicts were written before the confidence and GPU-count fields changed: 9 of 10 replays
    // "differed" (audit finding 17). A rule change that moves a fixture's verdict must regenerate it.
    for (const char* job : {"job-4242", "job-4343"}) {
        const auto r = run_process(
            {STALLSCOPE_EXE, "replay", std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/" + job, "--json"});
        std::istringstream lines(r.out);
        int compared = 0;
        for (std::string line; std::getline(lines, line);) {
            const Json j = Json::parse(line);
            if (j["matches_recorded"].is_null()) continue;  // no verdict line (helper killed)
            ++compared;
            CHECK_MESSAGE(
                j["matches_recorded"] == true,
                j["timeline"].get<std::string>()
                    << " is stale: run fixtures/timelines/make_multinode_job.py build/helper/stallscope; "
                    << j.value("recorded_difference", Json()).dump());
        }
        CHECK(compared >= 4);
    }
}
