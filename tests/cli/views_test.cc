// `stallscope html` and `stallscope compare` on the 4-node fixture job and the scenario timelines. The
// page is also opened in a real browser by tests/integration/browser_test.py.
#include <doctest/doctest.h>

#include <fstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;
using stallscope::test::slurp;

namespace {

const std::string kJobDir = std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4242";
const std::string kScenarios = std::string(STALLSCOPE_SOURCE_DIR) + "/tests/scenarios/";

// The JSON embedded in <script type='application/json' id=ID>...</script>.
Json embedded_json(const std::string& page, const std::string& id) {
    const std::string open = "<script type='application/json' id=" + id + ">";
    const auto from = page.find(open);
    REQUIRE(from != std::string::npos);
    const auto to = page.find("</script>", from);
    return Json::parse(page.substr(from + open.size(), to - from - open.size()));
}

}  // namespace

TEST_CASE("html: one self-contained page with the charts, the straggler marked, the report's numbers") {
    const std::string out = make_temp_dir("views-html") + "/job.html";
    const auto r = run_process({STALLSCOPE_EXE, "html", kJobDir, "-o", out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string page = slurp(out);
    for (const char* id : {"reasons-chart", "gpu-util", "gpu-power", "fabric-rates", "node-heatmap",
                           "nodes-table", "gpus-table", "ports-table"})
        CHECK_MESSAGE(page.find(std::string("id='") + id + "'") != std::string::npos, id);
    // Self-contained: nothing loaded from anywhere (the CSP forbids it too).
    CHECK(page.find("src=") == std::string::npos);
    CHECK(page.find("href=") == std::string::npos);
    CHECK(page.find("default-src 'none'") != std::string::npos);
    // The heatmap marks the straggler node; the verdict is in the header.
    CHECK(page.find("class='rowlabel alarm' x='60' y=") != std::string::npos);
    CHECK(page.find(">straggler</text>") != std::string::npos);
    CHECK(page.find("id=verdict-label>FAIL_RISK<") != std::string::npos);
    // 32 GPUs -> 32 utilization lines with one point per sample.
    const auto util = page.find("id='gpu-util'");
    const auto power = page.find("id='gpu-power'");
    std::size_t lines = 0;
    for (auto at = page.find("<polyline", util); at != std::string::npos && at < power;
         at = page.find("<polyline", at + 1))
        ++lines;
    CHECK(lines == 32);
    // The embedded report is `report --json`'s.
    const auto report = run_process({STALLSCOPE_EXE, "report", kJobDir, "--json"});
    CHECK(embedded_json(page, "report-json") == Json::parse(report.out));
}

TEST_CASE("html: text from the recording is escaped, a bad input is an error and writes nothing") {
    const std::string dir = make_temp_dir("views-html-escape");
    // A job name with markup (names are user-controlled): copied into a timeline of our own.
    std::string timeline = slurp(kScenarios + "healthy_baseline.jsonl");
    const std::string evil = "<script>alert(1)</script>";
    for (auto at = timeline.find("\"context\":{"); at != std::string::npos;
         at = timeline.find("\"context\":{", at + 1))
        timeline.insert(at + 11, "\"job_name\":\"" + evil + "\",");
    std::ofstream(dir + "/timeline.0.n1.jsonl") << timeline;
    const auto r = run_process({STALLSCOPE_EXE, "html", dir, "-o", dir + "/page.html"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string page = slurp(dir + "/page.html");
    CHECK(page.find(evil) == std::string::npos);
    CHECK(page.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(embedded_json(page, "report-json")["job_name"] == evil);  // \u003c inside the script element

    const auto bad = run_process({STALLSCOPE_EXE, "html", "/nonexistent", "-o", dir + "/none.html"});
    CHECK(bad.exit_code == 1);
    CHECK(slurp(dir + "/none.html").empty());
    const auto unwritable = run_process({STALLSCOPE_EXE, "html", kJobDir, "-o", "/nonexistent/dir/x.html"});
    CHECK(unwritable.exit_code == 1);
    CHECK(unwritable.err.find("/nonexistent/dir") != std::string::npos);
}

TEST_CASE("compare of two unfinished recordings cannot tell the speed, and lists what differs") {
    const std::string a = kScenarios + "healthy_baseline.jsonl", b = kScenarios + "thermal_throttle.jsonl";
    const std::string html = make_temp_dir("views-compare") + "/compare.html";
    const auto r = run_process({STALLSCOPE_EXE, "compare", a, b, "--json", "--html", html});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const Json j = Json::parse(r.out);
    CHECK(j["schema"] == "stallscope.compare/1");
    // Scenario timelines carry no verdict line: a healthy one merges as UNKNOWN (recording_incomplete:
    // silence never reads as FAST), the throttled one keeps its SLOW. Neither step has a final duration,
    // and equal lower bounds decide nothing: a SLOW label is not a measure of speed.
    CHECK(j["a"]["label"] == "UNKNOWN");
    CHECK(j["b"]["label"] == "SLOW");
    CHECK(j["speed"]["b_against_a"] == "unknown");
    CHECK(j["reasons_only_in_a"].empty());
    CHECK(std::find(j["reasons_only_in_b"].begin(), j["reasons_only_in_b"].end(), "gpu_thermal_throttle") !=
          j["reasons_only_in_b"].end());
    CHECK(j["because"].get<std::string>().rfind("Cannot tell whether B is slower than A", 0) == 0);
    CHECK(j["evidence"].get<std::string>().find("gpu_thermal_throttle") != std::string::npos);
    bool sm_clock_fell = false;
    for (const auto& m : j["metrics"])
        if (m["key"] == "gpu_sm_clock_mhz") sm_clock_fell = m["delta"].get<double>() < 0;
    CHECK(sm_clock_fell);
    CHECK(j["aligned"]["gpu_util_pct_a"].size() == j["aligned"]["gpu_util_pct_b"].size());
    CHECK(j["aligned"]["gpu_sm_clock_mhz_b"].size() == j["aligned"]["gpu_sm_clock_mhz_a"].size());
    const std::string page = slurp(html);
    CHECK(page.find("id=because><b>Cannot tell whether B is slower") != std::string::npos);
    CHECK(embedded_json(page, "compare-json") == j);

    const auto text = run_process({STALLSCOPE_EXE, "compare", a, b});
    CHECK(text.out.find("reasons only in B: gpu_temperature_high gpu_thermal_throttle") != std::string::npos);
}

TEST_CASE("compare of a job with itself: as fast; a multi-node job against one node works") {
    const auto same = run_process({STALLSCOPE_EXE, "compare", kJobDir, kJobDir, "--json"});
    REQUIRE(same.exit_code == 0);
    const Json j = Json::parse(same.out);
    CHECK(j["because"].get<std::string>().rfind("B is as fast as A", 0) == 0);
    for (const auto& m : j["metrics"]) CHECK(m["worse_in_b"] == false);
    const auto mixed =
        run_process({STALLSCOPE_EXE, "compare", kScenarios + "healthy_baseline.jsonl", kJobDir, "--json"});
    REQUIRE(mixed.exit_code == 0);
    const Json m = Json::parse(mixed.out);
    CHECK(m["b"]["nodes"] == 4);
    CHECK(std::find(m["reasons_only_in_b"].begin(), m["reasons_only_in_b"].end(), "node_straggler") !=
          m["reasons_only_in_b"].end());
}

TEST_CASE("compare resolves a job id through the AdminComment's verdict file") {
    // Job 103's AdminComment names a verdict file in the fixture job's directory.
    const std::string sacct = std::string(STALLSCOPE_SOURCE_DIR) + "/tests/cli/fake_sacct.py";
    const auto ok = run_process(
        {STALLSCOPE_EXE, "compare", kScenarios + "healthy_baseline.jsonl", "103", "--sacct", sacct, "--json"},
        {"FAKE_SACCT_JOB_DIR=" + kJobDir});
    REQUIRE_MESSAGE(ok.exit_code == 0, ok.err);
    CHECK(Json::parse(ok.out)["b"]["job_id"] == "4242");
    CHECK(Json::parse(ok.out)["b"]["input"] == "103");
    // Job 100's segment names no file: nothing to compare, said so.
    const auto r = run_process({STALLSCOPE_EXE, "compare", "100", kJobDir, "--sacct", sacct});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("job 100") != std::string::npos);
    CHECK(r.err.find("names no verdict file") != std::string::npos);
}
