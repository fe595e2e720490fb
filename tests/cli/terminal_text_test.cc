// Job-controlled text at every sink an admin reads (issue 36: L2, I7, I1, I5): compare, replay, jobs,
// html's stderr, the HTML page's CSP. Inputs shaped as the security review shaped them: every string
// field of a verdict set to markup, an OSC title sequence, a CSI and a UTF-8-encoded C1 CSI.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::kFakeSacct;
using stallscope::test::kJob4242;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;
using stallscope::test::slurp;

namespace {

const std::string kVerdict =
    std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4343/verdict.0.node-02.json";
const std::string kScenarioDir = std::string(STALLSCOPE_SOURCE_DIR) + "/tests/scenarios/";
// ESC ] 0 ; title BEL (OSC), ESC [ 31 m (CSI), U+009B (C1 CSI in UTF-8), U+202E (right-to-left override).
const std::string kHostile =
    "x\x1b]0;pwned\x07\x1b[31m\xc2\x9b"
    "2J\xe2\x80\xaey";

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

// No byte a terminal acts on: ESC, BEL, the C1 CSI, the bidi override.
void check_terminal_safe(const std::string& text, const char* what) {
    CHECK_MESSAGE(text.find('\x1b') == std::string::npos, what << ": raw ESC in\n" << text);
    CHECK_MESSAGE(text.find('\x07') == std::string::npos, what << ": raw BEL");
    CHECK_MESSAGE(text.find("\xc2\x9b") == std::string::npos, what << ": raw C1 CSI");
    CHECK_MESSAGE(text.find("\xe2\x80\xae") == std::string::npos, what << ": raw U+202E");
}

// A job directory whose one verdict carries the hostile text in its names and its reason.
std::string hostile_job_dir() {
    const std::string dir = make_temp_dir("terminal-text") + "/stallscope-77";
    std::filesystem::create_directory(dir);
    std::ifstream in(kVerdict);
    Json v = Json::parse(in);
    v["job_id"] = "77" + kHostile, v["job_name"] = kHostile, v["host"] = "node" + kHostile;
    for (auto& r : v["verdict"]["reasons"]) {
        r["code"] = r["code"].get<std::string>() + kHostile;
        r["subject"] = kHostile, r["message"] = kHostile;
    }
    write_text(dir + "/verdict.0.node-02.json", v.dump());
    return dir;
}

}  // namespace

TEST_CASE("L2: compare prints no raw escape, C1 or bidi control from a job's files") {
    const std::string dir = hostile_job_dir();
    const auto r = run_process({STALLSCOPE_EXE, "compare", kScenarioDir + "healthy_baseline.jsonl", dir});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.find("reasons only in B:") != std::string::npos);  // the whole view was printed
    CHECK(r.out.find("\\x1b]0;pwned\\x07") != std::string::npos);
    check_terminal_safe(r.out, "compare stdout");
    check_terminal_safe(r.err, "compare stderr");
}

TEST_CASE("L2: replay, html and report stderr name hostile file names escaped") {
    const std::string dir = make_temp_dir("terminal-replay") + "/stallscope-78";
    std::filesystem::create_directory(dir);
    const std::string timeline = dir + "/timeline.0.x" + kHostile + ".jsonl";
    write_text(timeline, "not a timeline\n");
    const auto replay = run_process({STALLSCOPE_EXE, "replay", timeline});
    CHECK(replay.exit_code == 1);
    CHECK(replay.err.find("stallscope: replay: ") != std::string::npos);
    check_terminal_safe(replay.err, "replay stderr");
    // A readable recording beside it: html writes its page (a directory of nothing but garbage is exit 1,
    // "no readable timeline"), and the garbage file is named in the warnings.
    write_text(dir + "/timeline.0.good.jsonl", slurp(kScenarioDir + "healthy_baseline.jsonl"));
    const auto html = run_process({STALLSCOPE_EXE, "html", dir, "-o", dir + "/../page" + kHostile + ".html"});
    CHECK(html.err.find("stallscope: wrote ") != std::string::npos);
    check_terminal_safe(html.err, "html stderr");
    const auto report = run_process({STALLSCOPE_EXE, "report", dir});
    check_terminal_safe(report.out + report.err, "report");
}

TEST_CASE("L2: jobs escapes UTF-8-encoded C1 controls that arrive %-encoded in a segment") {
    const auto r = run_process({STALLSCOPE_EXE, "jobs", "--sacct", kFakeSacct}, {"FAKE_SACCT_C1=1"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.find("104") != std::string::npos);
    CHECK(r.out.find("x\\xc2\\x9b2J\\xc2\\x9d0;PWNED\\x07y") != std::string::npos);
    check_terminal_safe(r.out, "jobs");
    CHECK(r.out.find("\xc2\x9d") == std::string::npos);
}

TEST_CASE("I7: the HTML page shows no bidi override from a job's files") {
    const std::string dir = hostile_job_dir();
    write_text(dir + "/timeline.0.node-02.jsonl", slurp(kJob4242 + "/timeline.0.gpu-node-01.jsonl"));
    const std::string page = dir + "/../page.html";
    const auto r = run_process({STALLSCOPE_EXE, "report", dir, "--html", page});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string text = slurp(page);
    CHECK(text.find("\xe2\x80\xae") == std::string::npos);
    CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("I5: the page pins its one inline script by hash, no unsafe-inline script, no base or form") {
    const std::string page = make_temp_dir("terminal-csp") + "/job.html";
    const auto r = run_process({STALLSCOPE_EXE, "html", kJob4242, "-o", page});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string text = slurp(page);
    const auto csp_at = text.find("Content-Security-Policy content=\"");
    REQUIRE(csp_at != std::string::npos);
    const std::string csp = text.substr(csp_at, text.find('"', csp_at + 33) - csp_at);
    CHECK(csp.find("script-src 'sha256-") != std::string::npos);
    CHECK(csp.find("script-src 'unsafe-inline'") == std::string::npos);
    CHECK(csp.find("base-uri 'none'") != std::string::npos);
    CHECK(csp.find("form-action 'none'") != std::string::npos);
    // The hash is the one of the script the page holds, byte for byte (what a browser checks).
    const auto check =
        run_process({"/usr/bin/env", "python3", "-c",
                     "import base64,hashlib,re,sys\n"
                     "t=open(sys.argv[1],encoding='utf-8').read()\n"
                     "s=re.findall(r'<script>(.*?)</script>',t,re.S)\n"
                     "h=re.search(r\"script-src 'sha256-([^']+)'\",t).group(1)\n"
                     "assert len(s)==1,len(s)\n"
                     "print(base64.b64encode(hashlib.sha256(s[0].encode()).digest()).decode()==h)",
                     page});
    REQUIRE_MESSAGE(check.exit_code == 0, check.err);
    CHECK(check.out == "True\n");
}

TEST_CASE(
    "I1: compare says which directory a job id used; a path named like the id no longer wins silently") {
    const std::string cwd = make_temp_dir("terminal-compare");
    std::filesystem::create_directory(cwd + "/103");
    std::filesystem::copy_file(kVerdict, cwd + "/103/verdict.0.node-02.json");
    const auto r = run_process({"/usr/bin/env", "-C", cwd, STALLSCOPE_EXE, "compare", "103", "job:103",
                                "--sacct", kFakeSacct, "--json"},
                               {"FAKE_SACCT_JOB_DIR=" + kJob4242});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const Json j = Json::parse(r.out);
    CHECK(j["a"]["job_id"] == "4343");  // ./103, the path
    CHECK(j["b"]["job_id"] == "4242");  // job 103, through its AdminComment
    CHECK(r.err.find("stallscope: compare: 103 is a path here; reading the path, not job 103 (write job:103 "
                     "for the job)") != std::string::npos);
    CHECK(r.err.find("stallscope: compare: job 103: reading " + kJob4242) != std::string::npos);
    const auto bad = run_process({STALLSCOPE_EXE, "compare", "job:1x", kJob4242});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("job:1x: not a job id") != std::string::npos);
}
