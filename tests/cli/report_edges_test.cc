// The edges of report/html/compare/record (audit 2026-11-27 findings 5, 6, 7, 9, 12, 14): a running job
// reads as running, garbage is an error, `missing=` agrees with the report, one output option under three
// names, a relative --out-dir where it was typed, a --nccl-test that could not run says so.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/cli/fixture_env.h"
#include "tests/cli/scenario_run.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::fixture_node_env;
using stallscope::test::kJob4242;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;
using stallscope::test::ScenarioRun;
using stallscope::test::start_process;
using stallscope::test::wait_process;
using stallscope::test::write_scenario_run;

namespace {

double now() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec);
}

bool has_reason(const Json& report, const std::string& code) {
    for (const auto& r : report["verdict"]["reasons"])
        if (r["code"] == code) return true;
    return false;
}

}  // namespace

TEST_CASE("a job whose helper wrote its last sample moments ago reads as running, not incomplete") {
    const std::string dir = make_temp_dir("edges-running");
    ScenarioRun run{"healthy_baseline"};
    run.finished = false, run.end_at = now() - 2;
    write_scenario_run(dir, run);
    const auto r = run_process({STALLSCOPE_EXE, "report", dir, "--json"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const Json j = Json::parse(r.out);
    CHECK(j["running"] == true);
    CHECK(j["running_nodes"] == Json::array({"n1"}));
    CHECK(j["missing_nodes"].empty());
    CHECK_FALSE(has_reason(j, "recording_incomplete"));
    CHECK(j["verdict"]["label"] != "UNKNOWN");  // what replay says of the samples so far
    const auto replay = run_process({STALLSCOPE_EXE, "replay", dir + "/timeline.0.n1.jsonl", "--json"});
    CHECK(Json::parse(replay.out)["label"] == j["verdict"]["label"]);
    const auto text = run_process({STALLSCOPE_EXE, "report", dir});
    CHECK(text.out.find("provisional: still running on 1 node(s)") != std::string::npos);
    const auto comment = run_process({STALLSCOPE_EXE, "report", dir, "--comment"});
    CHECK(comment.out.find("missing=") == std::string::npos);
    // The epilog's summarize runs when the job is over: the same seconds-old timeline without a verdict is
    // a helper that died (SIGKILL at the end of the step), never a running one.
    REQUIRE(run_process({STALLSCOPE_EXE, "summarize", dir}).exit_code == 0);
    std::ifstream summary_file(dir + "/summary.json");
    const Json summary = Json::parse(summary_file);
    bool incomplete = false;
    for (const Json& reason : summary["verdict"]["reasons"])
        incomplete |= reason["code"] == "recording_incomplete";
    CHECK(incomplete);

    // The same recording, its last sample an hour old: the helper is gone without a verdict.
    const std::string dead = make_temp_dir("edges-dead");
    run.end_at = now() - 3600;
    write_scenario_run(dead, run);
    const Json d = Json::parse(run_process({STALLSCOPE_EXE, "report", dead, "--json"}).out);
    CHECK(d["running"] == false);
    CHECK(d["missing_nodes"] == Json::array({"n1"}));
    CHECK(has_reason(d, "recording_incomplete"));
    CHECK(run_process({STALLSCOPE_EXE, "report", dead, "--comment"}).out.find("missing=n1") !=
          std::string::npos);
}

TEST_CASE("report on a live `stallscope record` gives a provisional verdict") {
    const std::string out = make_temp_dir("edges-live") + "/live";
    const int pid = start_process(
        {STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.2", "--count", "300"},
        fixture_node_env("dgx-h100"));
    REQUIRE(pid > 0);
    Json j;
    for (int tries = 0; tries < 100; ++tries) {  // until a few samples are flushed
        ::usleep(100 * 1000);
        const auto r = run_process({STALLSCOPE_EXE, "report", out, "--json"});
        if (r.exit_code != 0) continue;
        j = Json::parse(r.out);
        if (j["verdict"]["samples"].get<int>() >= 5) break;
    }
    REQUIRE(j.is_object());
    // What replay says of the same samples (here UNKNOWN step_too_short: a few seconds of a step), not
    // UNKNOWN recording_incomplete.
    CHECK(j["running"] == true);
    CHECK_FALSE(has_reason(j, "recording_incomplete"));
    CHECK(std::find(j["verdict"]["unknown_reasons"].begin(), j["verdict"]["unknown_reasons"].end(),
                    "recording_incomplete") == j["verdict"]["unknown_reasons"].end());
    ::kill(pid, SIGTERM);
    CHECK(wait_process(pid, 10) == 0);
    // Stopped: its verdict is written and the job is no longer running.
    const Json done = Json::parse(run_process({STALLSCOPE_EXE, "report", out, "--json"}).out);
    CHECK(done["running"] == false);
    CHECK(done["missing_nodes"].empty());
}

TEST_CASE("report --comment names no node missing when every timeline ends with its verdict line") {
    // job-4242: four timelines with verdict lines, no verdict.*.json beside them.
    const auto r = run_process({STALLSCOPE_EXE, "report", kJob4242, "--comment"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("missing=") == std::string::npos);
    CHECK(Json::parse(run_process({STALLSCOPE_EXE, "report", kJob4242, "--json"}).out)["missing_nodes"]
              .empty());
}

TEST_CASE("garbage or another program's JSON to report and html: exit 1, the reason on stderr") {
    const std::string dir = make_temp_dir("edges-garbage");
    { std::ofstream(dir + "/garbage.jsonl.zst") << "\x28\xb5\x2f\xfd not a zstd frame at all"; }
    { std::ofstream(dir + "/other.jsonl") << "{\"schema\":\"something.else/1\",\"x\":1}\n"; }
    for (const char* name : {"/garbage.jsonl.zst", "/other.jsonl"}) {
        const std::string in = dir + name;
        const auto report = run_process({STALLSCOPE_EXE, "report", in});
        CHECK_MESSAGE(report.exit_code == 1, name);
        CHECK(report.out.empty());
        CHECK(report.err.find("not a stallscope timeline") != std::string::npos);
        const auto html = run_process({STALLSCOPE_EXE, "html", in, "-o", dir + "/x.html"});
        CHECK(html.exit_code == 1);
        CHECK(html.err.find("no readable timeline") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(dir + "/x.html"));
    }
}

TEST_CASE("-o FILE, --output FILE and --html FILE name the page in report, html and compare") {
    const std::string dir = make_temp_dir("edges-output");
    int n = 0;
    for (const std::string command : {"report", "html", "compare"})
        for (const std::string option : {"-o", "--output", "--html"}) {
            const std::string page = dir + "/" + std::to_string(++n) + ".html";
            std::vector<std::string> argv{STALLSCOPE_EXE, command, kJob4242};
            if (command == "compare") argv.push_back(kJob4242);
            argv.insert(argv.end(), {option, page});
            const auto r = run_process(argv);
            CHECK_MESSAGE(r.exit_code == 0, command << " " << option << ": " << r.err);
            CHECK_MESSAGE(std::filesystem::file_size(page) > 1000, command << " " << option);
        }
    const auto twice =
        run_process({STALLSCOPE_EXE, "html", kJob4242, "-o", dir + "/a.html", "--html", dir + "/b.html"});
    CHECK(twice.exit_code == 2);
}

TEST_CASE("record --out-dir with a relative path writes there, under the working directory") {
    const std::string cwd = make_temp_dir("edges-relative");
    char old[4096];
    REQUIRE(::getcwd(old, sizeof old) != nullptr);
    REQUIRE(::chdir(cwd.c_str()) == 0);
    const auto r = run_process(
        {STALLSCOPE_EXE, "record", "--out-dir", "r2", "--interval-seconds", "0.05", "--count", "2"},
        fixture_node_env("dgx-h100"));
    REQUIRE(::chdir(old) == 0);
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.find("not writable") == std::string::npos);
    bool timeline = false;
    for (const auto& e : std::filesystem::directory_iterator(cwd + "/r2"))
        timeline = timeline || e.path().filename().string().rfind("timeline.", 0) == 0;
    CHECK(timeline);
    // A bad --timeline-format is a usage error before any directory is made.
    const auto bad =
        run_process({STALLSCOPE_EXE, "record", "--out-dir", cwd + "/never", "--timeline-format", "7"},
                    fixture_node_env("dgx-h100"));
    CHECK(bad.exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(cwd + "/never"));
}

TEST_CASE("--nccl-test without all_reduce_perf on PATH says so in the human output") {
    auto env = fixture_node_env("dgx-h100");
    env.push_back("PATH=/nonexistent");
    const auto r = run_process({STALLSCOPE_EXE, "--nccl-test"}, env);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("nccl-test: not run: all_reduce_perf is not on PATH") != std::string::npos);
}

TEST_CASE("report --ended: a seconds-old timeline without a verdict after the job is a helper that died") {
    // contrib/slurm/slurmctld-epilog.sh runs `report --comment` after the job: a helper SIGKILLed at its
    // end leaves a timeline seconds old, which without --ended reads as a step still running.
    const std::string dir = make_temp_dir("edges-ended");
    ScenarioRun run{"healthy_baseline"};
    run.finished = false, run.end_at = now() - 2;
    write_scenario_run(dir, run);
    const auto comment = run_process({STALLSCOPE_EXE, "report", dir, "--comment", "--ended"});
    REQUIRE_MESSAGE(comment.exit_code == 0, comment.err);
    CHECK_MESSAGE(comment.out.find("missing=n1") != std::string::npos, comment.out);
    const Json j = Json::parse(run_process({STALLSCOPE_EXE, "report", dir, "--json", "--ended"}).out);
    CHECK(j["running"] == false);
    CHECK(j["missing_nodes"] == Json::array({"n1"}));
    CHECK(has_reason(j, "recording_incomplete"));
    // Without --ended the same directory is a running job (the test above), and the epilog passes it.
    CHECK(run_process({STALLSCOPE_EXE, "report", dir, "--comment"}).out.find("missing=") ==
          std::string::npos);
    std::ifstream epilog(std::string(STALLSCOPE_SOURCE_DIR) + "/contrib/slurm/slurmctld-epilog.sh");
    const std::string script((std::istreambuf_iterator<char>(epilog)), std::istreambuf_iterator<char>());
    CHECK(script.find("report --comment --ended") != std::string::npos);
}
