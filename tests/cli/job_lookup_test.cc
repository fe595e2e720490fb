// Job ids everywhere (audit 2026-11-27 finding 10): `report 4242`, `html 4242 -o x`, `compare 4242 4343`,
// `watch 4242`, `jobs 4242`, the way `seff JOBID` is used; one lookup (helper/job_lookup.h) with a fake
// sacct.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::kFakeSacct;
using stallscope::test::kJob4242;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;

namespace {

// A PATH whose `sacct` is the fake, as on a login node: no --sacct needed.
std::string path_with_fake_sacct() {
    static const std::string dir = [] {
        const std::string d = make_temp_dir("lookup-path");
        REQUIRE(::symlink(kFakeSacct.c_str(), (d + "/sacct").c_str()) == 0);
        return d;
    }();
    const char* path = std::getenv("PATH");
    return "PATH=" + dir + ":" + (path ? path : "/usr/bin:/bin");
}

bool has(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("report JOBID: the AdminComment's file= is the job directory (what the epilog writes)") {
    const auto r = run_process({STALLSCOPE_EXE, "report", "105", "--json"},
                               {path_with_fake_sacct(), "FAKE_SACCT_JOB_DIR=" + kJob4242});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(Json::parse(r.out)["job_id"] == "4242");
    CHECK(has(r.err, "report: job 105: reading " + kJob4242 + " (the directory its AdminComment names)"));
}

TEST_CASE("report JOBID: the AdminComment's file= is a verdict file: its directory is read") {
    const auto r = run_process({STALLSCOPE_EXE, "report", "103"},
                               {path_with_fake_sacct(), "FAKE_SACCT_JOB_DIR=" + kJob4242});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(has(r.out, "4242"));
    CHECK(has(r.err, "reading " + kJob4242 + " ("));
}

TEST_CASE("html JOBID and watch JOBID: a job without a comment segment is found in its WorkDir") {
    const std::string work = make_temp_dir("lookup-workdir");
    REQUIRE(::symlink(kJob4242.c_str(), (work + "/stallscope-106").c_str()) == 0);
    const std::string page = work + "/job.html";
    const auto r = run_process({STALLSCOPE_EXE, "html", "106", "-o", page},
                               {path_with_fake_sacct(), "FAKE_SACCT_WORKDIR=" + work});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(has(r.err, "html: job 106: reading " + work +
                         "/stallscope-106 (stallscope-<jobid> in the job's WorkDir)"));
    std::ifstream in(page);
    CHECK(in.good());
    const auto w = run_process({STALLSCOPE_EXE, "watch", "106", "--once", "--json", "--sacct", kFakeSacct},
                               {"FAKE_SACCT_WORKDIR=" + work});
    CHECK_MESSAGE(w.exit_code == 0, w.err);
    CHECK(has(w.err, "watch: job 106: reading " + work + "/stallscope-106"));
}

TEST_CASE("report, html, compare of an unknown job id: exit 1 naming the id and every place tried") {
    const std::string html = make_temp_dir("lookup-unknown") + "/x.html";
    const std::vector<std::vector<std::string>> commands = {
        {STALLSCOPE_EXE, "report", "999999"},
        {STALLSCOPE_EXE, "html", "999999", "-o", html},
        {STALLSCOPE_EXE, "compare", kJob4242, "999999"},
        {STALLSCOPE_EXE, "report", "job:999999"},
    };
    for (const auto& argv : commands) {
        const auto r = run_process(argv, {path_with_fake_sacct()});
        CHECK_MESSAGE(r.exit_code == 1, argv[1]);
        CHECK_MESSAGE(has(r.err, argv[1] + ": job 999999: no stallscope directory found (tried "), r.err);
        CHECK_MESSAGE(has(r.err, "sacct (it knows no job 999999)"), r.err);
        CHECK_MESSAGE(has(r.err, "./stallscope-999999)"), r.err);
        CHECK(r.out.empty());
    }
    // A job sacct knows, with no segment and no WorkDir directory: both are named.
    const auto known = run_process({STALLSCOPE_EXE, "report", "106"}, {path_with_fake_sacct()});
    CHECK(known.exit_code == 1);
    CHECK_MESSAGE(has(known.err, "the AdminComment (no stallscope segment); WorkDir (sacct gave none)"),
                  known.err);
    // sacct itself failing: its own words.
    const auto failed =
        run_process({STALLSCOPE_EXE, "report", "4242"}, {path_with_fake_sacct(), "FAKE_SACCT_FAIL=1"});
    CHECK(failed.exit_code == 1);
    CHECK_MESSAGE(has(failed.err, "Could not establish a configuration source"), failed.err);
}

TEST_CASE("jobs JOBID: that job's row, whatever its age") {
    const std::string args = make_temp_dir("lookup-jobs") + "/args";
    const auto r =
        run_process({STALLSCOPE_EXE, "jobs", "100"}, {path_with_fake_sacct(), "FAKE_SACCT_ARGS=" + args});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(has(r.out, "fabric_congestion"));
    CHECK_FALSE(has(r.out, "FAIL_RISK"));  // job 102's row is not listed
    std::ifstream in(args);
    const std::string sent((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(has(sent, "--jobs=100\n"));
    CHECK_FALSE(has(sent, "--starttime"));
    const auto bad = run_process({STALLSCOPE_EXE, "jobs", "not-a-job"});
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.err, "'not-a-job' is not a job id"));
}
