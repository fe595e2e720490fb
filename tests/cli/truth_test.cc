// The CLI tells the truth (issue 16): per-subcommand --help, exit codes, sink failures on stderr and in
// `warnings`, `jobs` with sacct's own message and no forged rows, periodic text with timestamps.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/cli/fixture_env.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::fixture_node_env;
using stallscope::test::kFakeSacct;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

}  // namespace

TEST_CASE("every subcommand answers --help with its options and defaults, before running anything") {
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"report", "--json"},         {"replay", "--rules FILE"}, {"jobs", "default now-1days"},
        {"record", "default 30"},     {"summarize", "DIR"},       {"compare", "--html FILE"},
        {"html", "-o, --output FILE"}};
    for (const auto& entry : expected) {
        const std::string& command = entry.first;  // not a structured binding: clang 14 cannot capture one
        const std::string& text = entry.second;
        // `record --help` would otherwise start sampling, `summarize --help` write files.
        const auto r = run_process({STALLSCOPE_EXE, command, "--help"});
        CHECK_MESSAGE(r.exit_code == 0, command);
        CHECK_MESSAGE(r.out.find("Usage: stallscope " + command) != std::string::npos, command);
        CHECK_MESSAGE(r.out.find(text) != std::string::npos, std::string(command + ": " + text));
        CHECK(r.err.empty());
    }
    const auto r = run_process({STALLSCOPE_EXE, "jobs", "-h"});
    CHECK(r.exit_code == 0);
    const auto sample = run_process({STALLSCOPE_EXE, "--json", "--help"});
    CHECK(sample.exit_code == 0);
    CHECK(sample.out.find("--interval-seconds") != std::string::npos);
}

TEST_CASE("usage errors exit 2, failures exit 1, each with one clear line") {
    struct Case {
        std::vector<std::string> args;
        int code;
        std::string says;
    };
    const std::vector<Case> cases = {
        {{"summarize", "/nonexistent"}, 1, "/nonexistent: No such file or directory"},
        {{"summarize", "/etc/hostname"}, 1, "not a directory"},
        {{"--rules", "/tmp"}, 2, "is a directory"},
        {{"replay", "x.jsonl", "--rules", "/tmp"}, 2, "is a directory"},
        {{"jobs", "--since", "yesterday-ish"}, 2, "is not a sacct time"},
        {{"jobs", "--user", "a", "--all-users"}, 2, "exclude each other"},
        {{"html", "fixtures"}, 2, "needs -o FILE"},
        {{"compare", "a"}, 2, "exactly two inputs"},
        {{"compare", "/nonexistent-a", "/nonexistent-b"}, 1, "no such file, directory or job id"},
        {{"report", "--bogus", "x"},
         2,
         "unknown option '--bogus' (see 'stallscope report --help')"},           // no guess
        {{"--bogus"}, 2, "unknown option '--bogus' (see 'stallscope --help')"},  // the sampling options
        // A near miss names the option meant: a prefix, a typo, a missing dash.
        {{"html", "fixtures", "--out", "x.html"}, 2, "unknown option '--out' (did you mean --output?)"},
        {{"report", "--jsno", "x"}, 2, "unknown option '--jsno' (did you mean --json?)"},
        {{"record", "--outdir", "x"}, 2, "unknown option '--outdir' (did you mean --out-dir?)"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{STALLSCOPE_EXE};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        const auto r = run_process(argv);
        CHECK_MESSAGE(r.exit_code == c.code,
                      std::string(c.args.front() + " " + c.args.back() + ": " + r.err));
        CHECK_MESSAGE(r.err.find(c.says) != std::string::npos, r.err);
        CHECK(r.err.rfind("stallscope: ", 0) == 0);
        CHECK(count_of(r.err, "\n") == 1);
    }
}

TEST_CASE("--alert-webhook-url notaurl is one message with one prefix") {
    const auto r = run_process({STALLSCOPE_EXE, "--alert-webhook-url", "notaurl"});
    CHECK(r.exit_code == 2);
    CHECK(count_of(r.err, "stallscope:") == 1);
    CHECK(r.err.find("notaurl") != std::string::npos);
}

TEST_CASE("a Prometheus textfile that cannot be written is on stderr, in warnings, and exit 1") {
    const std::string dir = make_temp_dir("views-sink");
    for (const std::string& path : {std::string("/nonexistent/dir/s.prom"), dir}) {
        const auto r = run_process({STALLSCOPE_EXE, "--json", "--prometheus-textfile", path},
                                   fixture_node_env("dgx-h100"));
        CHECK_MESSAGE(r.exit_code == 1, path);
        CHECK(r.err.find("prometheus textfile " + path) != std::string::npos);
        const Json j = Json::parse(r.out);
        bool in_warnings = false;
        for (const auto& w : j["warnings"])
            in_warnings =
                in_warnings || w.get<std::string>().find("prometheus textfile") != std::string::npos;
        CHECK_MESSAGE(in_warnings, path);
    }
}

TEST_CASE("periodic output repeats a sink failure only when it changes, and stamps each sample's time") {
    const auto r = run_process({STALLSCOPE_EXE, "--interval-seconds", "0.05", "--count", "4",
                                "--prometheus-textfile", "/nonexistent/dir/s.prom"},
                               fixture_node_env("garbage"));
    CHECK(r.exit_code == 1);
    CHECK(count_of(r.err, "prometheus textfile") == 1);
    // Four samples, each starting with an RFC 3339 time; the garbage node's warnings printed once.
    std::istringstream lines(r.out);
    std::string line;
    int stamped = 0;
    while (std::getline(lines, line))
        if (line.size() > 20 && line[4] == '-' && line[10] == 'T' && line.find("Z  ") == 23) ++stamped;
    CHECK(stamped == 4);
    CHECK(count_of(r.out, "warnings (") == 1);
    CHECK(count_of(r.out, "prometheus textfile") == 1);
}

TEST_CASE("an Alertmanager nobody listens on is reported, not swallowed") {
    // The throttled fake-NVML fixture profiles FAIL_RISK on its first sample: there are alerts to post.
    auto env = fixture_node_env("dgx-h100");
    env[5] = "STALLSCOPE_FAKE_NVML_FIXTURE=" + std::string(STALLSCOPE_FIXTURES_DIR) + "/nvml/throttled.json";
    const auto r =
        run_process({STALLSCOPE_EXE, "--json", "--alert-webhook-url", "http://127.0.0.1:9/"}, env, 30);
    const Json j = Json::parse(r.out);
    REQUIRE(j["profile"]["label"] == "FAIL_RISK");
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("alertmanager http://127.0.0.1:9/") != std::string::npos);
    CHECK(count_of(r.err, "stallscope:") == 1);
    bool in_warnings = false;
    for (const auto& w : j["warnings"])
        in_warnings = in_warnings || w.get<std::string>().find("alertmanager") == 0;
    CHECK(in_warnings);
}

TEST_CASE("periodic: a failing Alertmanager is reported once while it keeps failing, then summed up") {
    auto env = fixture_node_env("dgx-h100");
    env[5] = "STALLSCOPE_FAKE_NVML_FIXTURE=" + std::string(STALLSCOPE_FIXTURES_DIR) + "/nvml/throttled.json";
    const auto r = run_process({STALLSCOPE_EXE, "--interval-seconds", "0.3", "--count", "8", "--json",
                                "--alert-webhook-url", "http://127.0.0.1:9/"},
                               env, 60);
    CHECK(r.exit_code == 1);
    CHECK(count_of(r.err, "posts failing") == 1);
    CHECK(count_of(r.err, "posts failed,") == 1);  // the summary at exit
}

TEST_CASE("a job adopted from another process's environment is named as such") {
    const std::string proc = make_temp_dir("views-proc");
    ::mkdir((proc + "/4242").c_str(), 0755);
    std::ofstream(proc + "/4242/environ") << std::string("SLURM_JOB_ID=4242\0SLURM_STEP_ID=0\0", 34);
    auto env = fixture_node_env("vm");
    env.front() = "STALLSCOPE_PROCFS_ROOT=" + proc;  // a /proc with one process: a job step's
    const auto text = run_process({STALLSCOPE_EXE}, env);
    CHECK(text.exit_code == 0);
    CHECK(
        text.out.find("job 4242 step 0 (slurm, detected from pid 4242: this shell is not part of the job)") !=
        std::string::npos);
    const auto json = run_process({STALLSCOPE_EXE, "--json"}, env);
    const Json j = Json::parse(json.out);
    CHECK(j["context"]["job_id"] == "4242");
    CHECK(j["context"]["detected_from"] == "another process's environment");
    CHECK(j["context"]["detected_from_pid"] == 4242);
    for (auto& e : env)
        if (e == "SLURM_JOB_ID=") e = "SLURM_JOB_ID=4242";  // inside the job: nothing was detected
    CHECK(run_process({STALLSCOPE_EXE}, env).out.find("detected from") == std::string::npos);
}

TEST_CASE("jobs shows sacct's own message when sacct fails") {
    const auto r = run_process({STALLSCOPE_EXE, "jobs", "--sacct", kFakeSacct}, {"FAKE_SACCT_FAIL=1"});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "stallscope: jobs: sacct: fatal: Could not establish a configuration source\n");
    // Debian's real sacct without a slurm.conf fails the same way, quickly (skipped where one exists).
    struct stat st {};
    if (!std::getenv("SLURM_CONF") && ::stat("/etc/slurm/slurm.conf", &st) != 0 &&
        ::stat("/usr/bin/sacct", &st) == 0) {
        const auto real = run_process({STALLSCOPE_EXE, "jobs"}, {}, 40);
        CHECK(real.exit_code == 1);
        CHECK(real.err.find("sacct: ") != std::string::npos);
        CHECK(real.err.find("exit status") == std::string::npos);
    }
}

TEST_CASE("jobs: names cannot forge rows, only AdminComment counts, control characters are escaped") {
    const std::string args_file = make_temp_dir("views-sacct") + "/args";
    const auto r =
        run_process({STALLSCOPE_EXE, "jobs", "--sacct", kFakeSacct, "--all", "--since", "2026-11-01"},
                    {"FAKE_SACCT_ARGS=" + args_file});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("\n999") == std::string::npos);  // never a row of its own
    CHECK(r.out.find("x\\x0a999|mallory") != std::string::npos);
    CHECK(count_of(r.out, "\n") == 4);  // header + 3 jobs, the forged line is part of job 101's name
    CHECK(r.out.find("101          mallory") != std::string::npos);
    CHECK(r.out.find("(not recorded by stallscope)") != std::string::npos);
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK(r.out.find("\\x1b[31mred") != std::string::npos);
    std::ifstream in(args_file);
    const std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(args.find("--starttime=2026-11-01") != std::string::npos);
    CHECK(args.find(",Comment") == std::string::npos);  // the user-writable Comment is not even asked for

    const auto j = run_process({STALLSCOPE_EXE, "jobs", "--sacct", kFakeSacct, "--json"});
    REQUIRE(j.exit_code == 0);
    const Json rows = Json::parse(j.out);
    REQUIRE(rows.size() == 2);  // without --all: only jobs with a segment; no forged job 999
    CHECK(rows[0]["job_id"] == "100");
    CHECK(rows[1]["job_id"] == "102");
    CHECK(rows[1]["node"] == "n\x1b[2J");  // JSON escapes it (\u001b); the value itself is kept
    CHECK(j.out.find('\x1b') == std::string::npos);
}
