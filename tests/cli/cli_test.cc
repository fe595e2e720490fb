// The one-shot and periodic CLI on fixture nodes, and its usage errors.
#include <doctest/doctest.h>

#include <sstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/cli/fixture_env.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::fixture_node_env;
using stallscope::test::run_process;

namespace {

std::vector<Json> json_lines(const std::string& text) {
    std::vector<Json> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) out.push_back(Json::parse(line));
    return out;
}

}  // namespace

TEST_CASE("--help teaches every subcommand and the labels; --version prints the version") {
    auto r = run_process({STALLSCOPE_EXE, "--help"});
    CHECK(r.exit_code == 0);
    for (const char* word :
         {"record", "replay", "report", "summarize", "jobs", "--interval-seconds", "FAIL_RISK",
          "STALLSCOPE_SYSFS_ROOT", "--prometheus-textfile", "--alert-webhook-url"})
        CHECK_MESSAGE(r.out.find(word) != std::string::npos, word);
    r = run_process({STALLSCOPE_EXE, "--version"});
    CHECK(r.out.rfind("stallscope ", 0) == 0);
}

TEST_CASE("the binary starts without loading libcurl: the Alertmanager sink loads it when asked for") {
    // The dynamic loader lists what it would load and exits (what ldd does). libcurl brought ~28
    // libraries and ~6 ms of CPU to every helper, epilog and CLI start (bench/RESULTS.md).
    auto r = run_process({STALLSCOPE_EXE, "--version"}, {"LD_TRACE_LOADED_OBJECTS=1"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("libzstd") != std::string::npos);  // the listing is real
    CHECK_MESSAGE(r.out.find("libcurl") == std::string::npos, r.out);
}

TEST_CASE("usage errors are one line on stderr and exit code 2") {
    for (const std::vector<std::string>& args : {std::vector<std::string>{"--bogus"},
                                                 {"--interval-seconds", "0"},
                                                 {"--interval-seconds", "abc"},
                                                 {"--count", "3"},
                                                 {"--interval-seconds", "1", "--count", "-1"},
                                                 {"frobnicate"},
                                                 {"replay"},
                                                 {"record"},
                                                 {"--rules", "/nonexistent.conf"}}) {
        std::vector<std::string> argv{STALLSCOPE_EXE};
        argv.insert(argv.end(), args.begin(), args.end());
        const auto r = run_process(argv);
        CHECK_MESSAGE(r.exit_code == 2, args.front());
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.rfind("stallscope: ", 0) == 0);
    }
}

TEST_CASE("periodic --json on the DGX-like fixture prints one line per sample with the fake NVML's 8 GPUs") {
    const auto r = run_process({STALLSCOPE_EXE, "--interval-seconds", "0.05", "--count", "3", "--json"},
                               fixture_node_env("dgx-h100"));
    REQUIRE(r.exit_code == 0);
    const auto lines = json_lines(r.out);
    REQUIRE(lines.size() == 3);
    const Json& last = lines.back();
    CHECK(last["schema"] == "stallscope.snapshot/1");
    REQUIRE(last["gpus"].size() == 8);
    CHECK(last["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3");
    REQUIRE(last["rdma"].size() == 8);
    CHECK(last["rdma"][0]["rate_gbps"] == 400);
    CHECK(last["host_stats"]["mem_total_bytes"].get<double>() > 1e12);
    CHECK_FALSE(lines.front().contains("rates"));  // deltas need a second sample
    CHECK(last.contains("rates"));
    CHECK(last["profile"]["label"].is_string());
}

TEST_CASE("the garbage node gives valid JSON, exit 0, and warnings naming the bad inputs") {
    const auto r = run_process({STALLSCOPE_EXE, "--json"}, fixture_node_env("garbage"));
    REQUIRE(r.exit_code == 0);
    const Json j = Json::parse(r.out);
    CHECK(j["warnings"].size() >= 5);
    CHECK(j["profile"].contains("label"));
}

TEST_CASE("one-shot mode fires no delta rule and says why") {
    const auto r = run_process({STALLSCOPE_EXE, "--json"}, fixture_node_env("roce"));
    REQUIRE(r.exit_code == 0);
    const Json j = Json::parse(r.out);
    bool says_why = j["profile"].value("unknown_reason", "").find("sample") != std::string::npos;
    for (const auto& reason : j["profile"]["reasons"])
        says_why = says_why || reason["code"] == "delta_rules_pending";
    CHECK(says_why);
}

TEST_CASE("an AMD node reports its MI300X GPUs and no complaint about missing NVML") {
    auto env = fixture_node_env("amd-mi300");
    env.push_back("STALLSCOPE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1");
    const auto r = run_process({STALLSCOPE_EXE, "--json"}, env);
    REQUIRE(r.exit_code == 0);
    const Json j = Json::parse(r.out);
    REQUIRE(j["gpus"].size() == 4);
    CHECK(j["gpus"][0]["vendor"] == "amd");
    for (const auto& w : j["warnings"]) CHECK(w.get<std::string>().find("NVIDIA") == std::string::npos);
}

TEST_CASE("output that cannot be written (a full disk) is an error, exit 1, not a silent success") {
    const std::string job = std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4343";
    const std::vector<std::string> commands = {"--interval-seconds 0.01 --count 3 --json",
                                               "--interval-seconds 0.01 --count 3",
                                               "--json",
                                               "--version",
                                               "report " + job,
                                               "report --json " + job};
    for (const std::string& args : commands) {
        CAPTURE(args);
        // /dev/full: every write fails with ENOSPC. The shell only redirects (tests only, never the product).
        const auto r = run_process({"/bin/sh", "-c", "exec \"$0\" " + args + " >/dev/full", STALLSCOPE_EXE},
                                   fixture_node_env("vm"));
        CHECK(r.exit_code == 1);
        // The reason when stdio still knows it (a failed flush); a printf that failed earlier lost it.
        CHECK(r.err.find("stallscope: cannot write the output: ") != std::string::npos);
    }
}

TEST_CASE("a closed standard output is not handed to the first file the CLI opens") {
    const auto r = run_process(
        {"/bin/sh", "-c", "exec \"$0\" --interval-seconds 0.01 --count 3 --json >&-", STALLSCOPE_EXE},
        fixture_node_env("dgx-h100"));
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.empty());
}
