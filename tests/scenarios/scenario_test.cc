// Scenario suite: each synthetic timeline in tests/scenarios/*.jsonl is replayed through the real CLI
// (`stallscope replay FILE --json`, fork/exec) and its verdict checked: label and reasons[0].code.
// The timelines are written by tests/scenarios/generate.py; this table is the expectation.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct Expectation {
    const char* scenario;
    const char* label;
    const char* first_code;  // "" = no reasons at all
};

// clang-format off
const Expectation kScenarios[] = {
    {"healthy_baseline",       "FAST",      ""},
    {"healthy_long",           "FAST",      ""},
    {"cnp_storm",              "SLOW",      "fabric_congestion"},
    {"pfc_pause_storm",        "FAIL_RISK", "pfc_pause_storm"},
    {"rdma_loss",              "FAIL_RISK", "fabric_packet_loss"},
    {"ack_timeouts",           "FAIL_RISK", "fabric_ack_timeout"},
    {"link_flap",              "FAIL_RISK", "fabric_link_flap"},
    {"port_down",              "FAIL_RISK", "fabric_port_down"},
    {"thermal_throttle",       "SLOW",      "gpu_thermal_throttle"},
    {"power_brake",            "SLOW",      "gpu_power_brake"},
    {"busy_wait_hang",         "FAIL_RISK", "gpu_busy_wait_hang"},
    {"idle_gpus_2_of_8",       "SLOW",      "gpu_idle"},
    {"straggler_gpu",          "SLOW",      "gpu_straggler"},
    {"xid_79",                 "FAIL_RISK", "gpu_xid_critical"},
    {"xid_13",                 "FAIL_RISK", "gpu_xid_app_error"},
    {"ecc_row_remap_pending",  "FAIL_RISK", "gpu_ecc_uncorrected"},
    {"oom_kill",               "FAIL_RISK", "host_oom_kill"},
    {"memory_pressure",        "SLOW",      "host_memory_pressure"},
    {"tcp_only_eth0",          "FAST",      "network_interface_errors"},  // reported, not blamed on RDMA
    {"lifetime_counters_high", "FAST",      ""},
    {"collector_timeout",      "UNKNOWN",   "collector_failed"},
    {"stale_counters",         "UNKNOWN",   "telemetry_stale"},
    {"nccl_hang_with_fabric",  "FAIL_RISK", "fabric_ack_timeout"},  // + nccl reasons next to it
};
// clang-format on

struct RunResult {
    int exit_code = -1;
    std::string out, err;
};

std::string read_all(int fd) {
    std::string s;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    return s;
}

// fork/exec of the real binary, no shell; stderr goes to a temporary file to avoid pipe deadlock.
RunResult run_stallscope(const std::vector<std::string>& args) {
    RunResult r;
    int out_pipe[2];
    REQUIRE(::pipe(out_pipe) == 0);
    FILE* err_file = std::tmpfile();
    REQUIRE(err_file != nullptr);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(out_pipe[1], STDOUT_FILENO);
        ::dup2(fileno(err_file), STDERR_FILENO);
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        std::vector<char*> argv;
        static std::string exe = STALLSCOPE_EXE;
        argv.push_back(exe.data());
        std::vector<std::string> copy = args;
        for (auto& a : copy) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(exe.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(out_pipe[1]);
    r.out = read_all(out_pipe[0]);
    ::close(out_pipe[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::rewind(err_file);
    r.err = read_all(fileno(err_file));
    std::fclose(err_file);
    return r;
}

std::string scenario_path(const std::string& name) {
    return std::string(STALLSCOPE_SCENARIOS_DIR) + "/" + name + ".jsonl";
}

nlohmann::json replay(const std::string& name, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"replay", scenario_path(name), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_stallscope(args);
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto verdict = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    REQUIRE_FALSE(verdict.is_discarded());
    return verdict;
}

}  // namespace

TEST_CASE("every scenario replays through the CLI to its expected label and root cause") {
    for (const auto& e : kScenarios) {
        SUBCASE(e.scenario) {
            const auto v = replay(e.scenario);
            INFO("verdict: " << v.dump(2));
            CHECK(v["label"] == e.label);
            if (std::string(e.first_code).empty()) {
                CHECK(v["reasons"].empty());
            } else {
                REQUIRE(!v["reasons"].empty());
                CHECK(v["reasons"][0]["code"] == e.first_code);
            }
            if (std::string(e.scenario).rfind("healthy", 0) == 0) CHECK(v["label"] != "FAIL_RISK");
            if (std::string(e.label) == "UNKNOWN") CHECK(!v["unknown_reasons"].empty());
            CHECK(v["samples"].get<int>() > 1);
        }
    }
}

TEST_CASE("the verdict names the worst port, GPU and interface of its scenario") {
    CHECK(replay("cnp_storm")["worst_port"] == "mlx5_0/1");
    CHECK(replay("thermal_throttle")["worst_gpu"] == "GPU-00000005-aaaa-bbbb-cccc-dddddddddddd");
    CHECK(replay("pfc_pause_storm")["worst_interface"] == "ens1f0");
    CHECK(replay("collector_timeout")["unknown_reasons"] == nlohmann::json::array({"collectors_failing"}));
    const auto cnp = replay("cnp_storm");
    CHECK(cnp["bottleneck_hint"] == "network");
    CHECK(cnp["reasons"][0]["share"].get<double>() > 0.5);
    CHECK(cnp["reasons"][0]["evidence"]["rp_cnp_handled_per_s"].get<double>() ==
          1504);  // storm 1500 + background 4
}

TEST_CASE("replay with a changed thresholds file (--rules) changes the verdict") {
    const std::string rules = std::string(STALLSCOPE_BUILD_DIR) + "/scenario-test-rules.conf";
    {
        std::ofstream f(rules);
        f << "# CNP congestion only above 1M CNPs/s\ncnp_handled_per_s = 1000000\necn_marked_per_s = "
             "1000000\n";
    }
    CHECK(replay("cnp_storm")["label"] == "SLOW");
    const auto relaxed = replay("cnp_storm", {"--rules", rules});
    CHECK(relaxed["label"] == "FAST");
    CHECK(relaxed["reasons"].empty());
    // the documented config file is accepted as-is and gives the default verdict
    const auto documented = replay(
        "cnp_storm", {"--rules", std::string(STALLSCOPE_SOURCE_DIR) + "/contrib/stallscope-rules.conf"});
    CHECK(documented["label"] == "SLOW");
}

TEST_CASE("a bad thresholds file is a usage error naming file and line") {
    const std::string rules = std::string(STALLSCOPE_BUILD_DIR) + "/scenario-test-bad-rules.conf";
    {
        std::ofstream f(rules);
        f << "cnp_handled_per_s = 10\ncnp_per_second = 5\n";
    }
    const RunResult r = run_stallscope({"replay", scenario_path("cnp_storm"), "--rules", rules, "--json"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(rules + ":2: unknown key 'cnp_per_second'") != std::string::npos);
    CHECK(r.out.empty());
}

TEST_CASE("NCCL reasons show next to the fabric reasons when both fire") {
    const auto v = replay("nccl_hang_with_fabric");
    INFO("verdict: " << v.dump(2));
    std::map<std::string, std::string> category;
    for (const auto& r : v["reasons"]) category[r["code"]] = r["category"];
    CHECK(category["fabric_ack_timeout"] == "fabric");
    CHECK(category["nccl_collective_hang"] == "nccl");  // RAS: rank 9 behind on AllReduce for 120 s
    CHECK(category["nccl_ib_completion_error"] == "nccl");
    for (const auto& r : v["reasons"])
        if (r["code"] == "nccl_collective_hang") CHECK(r["evidence"]["lagging_ranks"] == "9");
}
