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
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Expectation {
    const char* scenario;
    const char* label;
    const char* first_code;  // "" = no reasons at all
};

// Healthy scenarios (name starts with "healthy") must be FAST with no warning or critical reason: what
// they show (checkpoint dips, start-up, an unused port) is at most info.
// clang-format off
const Expectation kScenarios[] = {
    {"healthy_baseline",            "FAST",      ""},
    {"healthy_long",                "FAST",      ""},
    {"healthy_checkpoint_dips",     "FAST",      "host_io_pressure"},      // info: 5 episodes of ~20 s
    {"healthy_eval_pauses",         "FAST",      ""},
    {"healthy_dataloader_warmup",   "FAST",      "gpu_low_utilization"},   // info: start-up
    {"healthy_nccl_init",           "FAST",      "gpu_low_utilization"},   // info: start-up
    {"healthy_second_step",         "FAST",      ""},
    {"healthy_sw_power_cap",        "FAST",      ""},
    {"healthy_unused_ib_port",      "FAST",      "fabric_port_inactive"},  // info
    {"healthy_cnp_bursts",          "FAST",      "fabric_congestion"},     // info: transient
    {"healthy_four_rails",          "FAST",      ""},
    {"healthy_gpu_memory_94pct",    "FAST",      ""},
    {"healthy_teardown_tail",       "FAST",      "gpu_low_utilization"},   // info: transient
    {"healthy_ras_missing_once",    "FAST",      ""},
    {"lifetime_counters_high",      "FAST",      ""},
    {"tcp_only_eth0",               "FAST",      "network_interface_errors"},  // reported, not blamed on RDMA
    {"cnp_storm",                   "SLOW",      "fabric_congestion"},
    {"thermal_throttle",            "SLOW",      "gpu_thermal_throttle"},
    {"power_brake",                 "SLOW",      "gpu_power_brake"},
    {"idle_gpus_2_of_8",            "SLOW",      "gpu_idle"},
    {"straggler_gpu",               "SLOW",      "gpu_straggler"},
    {"memory_pressure",             "SLOW",      "host_memory_pressure"},
    {"rail_down_before_step",       "SLOW",      "fabric_rail_down"},
    {"sustained_low_util",          "SLOW",      "gpu_low_utilization"},
    {"frequent_loader_dips",        "SLOW",      "gpu_low_utilization"},
    {"hw_thermal_one_gpu",          "SLOW",      "gpu_hw_thermal_slowdown"},
    {"port_degraded",               "SLOW",      "fabric_port_degraded"},
    {"io_pressure_sustained",       "SLOW",      "host_io_pressure"},
    {"pfc_pause_storm",             "FAIL_RISK", "pfc_pause_storm"},
    {"rdma_loss",                   "FAIL_RISK", "fabric_packet_loss"},
    {"ack_timeouts",                "FAIL_RISK", "fabric_ack_timeout"},
    {"link_flap",                   "FAIL_RISK", "fabric_link_flap"},
    {"port_down",                   "FAIL_RISK", "fabric_port_down"},
    {"short_step_port_down",        "FAIL_RISK", "fabric_port_down"},  // evidence beats "too short"
    {"retry_exceeded",              "FAIL_RISK", "fabric_retry_exceeded"},
    {"rnr_naks",                    "FAIL_RISK", "fabric_rnr_nak"},
    {"busy_wait_hang",              "FAIL_RISK", "gpu_busy_wait_hang"},
    {"xid_79",                      "FAIL_RISK", "gpu_xid_critical"},
    {"xid_13",                      "FAIL_RISK", "gpu_xid_app_error"},
    {"xid_94_contained",            "FAIL_RISK", "gpu_xid_app_error"},  // restart the app, not drain
    {"ecc_row_remap_pending",       "FAIL_RISK", "gpu_ecc_uncorrected"},
    {"row_remap_failure",           "FAIL_RISK", "gpu_row_remap_failure"},
    {"oom_kill",                    "FAIL_RISK", "host_oom_kill"},
    {"nccl_hang_with_fabric",       "FAIL_RISK", "fabric_ack_timeout"},  // + nccl reasons next to it
    {"ras_rank_missing_persistent", "FAIL_RISK", "nccl_rank_missing"},
    {"collector_timeout",           "UNKNOWN",   "collector_failed"},
    {"stale_counters",              "UNKNOWN",   "telemetry_stale"},
    {"short_step_quiet",            "UNKNOWN",   ""},
    {"nvml_not_loadable",           "UNKNOWN",   "gpu_telemetry_missing"},
    {"nvml_util_not_supported",     "UNKNOWN",   "gpu_telemetry_missing"},
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

const char* const kLabels[] = {"FAST", "SLOW", "FAIL_RISK", "UNKNOWN"};

int label_index(const std::string& label) {
    for (int i = 0; i < 4; ++i)
        if (label == kLabels[i]) return i;
    return -1;
}

// The confusion matrix (expected label x replayed label) as a Markdown table, with the first-reason and
// healthy-scenario counts under it: printed by every run and kept in the build directory.
std::string confusion_matrix(const int (&m)[4][4], int first_ok, int total, int healthy, int healthy_clean) {
    std::ostringstream o;
    o << "| expected \\ replayed | FAST | SLOW | FAIL_RISK | UNKNOWN |\n|---|---|---|---|---|\n";
    for (int e = 0; e < 4; ++e) {
        o << "| " << kLabels[e];
        for (int g = 0; g < 4; ++g) o << " | " << m[e][g];
        o << " |\n";
    }
    o << "\nright label: " << (m[0][0] + m[1][1] + m[2][2] + m[3][3]) << "/" << total
      << "; right first reason: " << first_ok << "/" << total
      << "; healthy scenarios with 0 warning/critical "
      << "reasons: " << healthy_clean << "/" << healthy << "\n";
    return o.str();
}

}  // namespace

TEST_CASE("every scenario replays through the CLI to its expected label and root cause") {
    int matrix[4][4] = {};
    int first_ok = 0, healthy = 0, healthy_clean = 0, total = 0;
    for (const auto& e : kScenarios) {
        CAPTURE(e.scenario);
        const auto v = replay(e.scenario);
        INFO("verdict: " << v.dump(2));
        ++total;
        const std::string label = v["label"];
        CHECK(label == e.label);
        const int got = label_index(label), expected = label_index(e.label);
        REQUIRE(expected >= 0);
        if (got >= 0) ++matrix[expected][got];
        const std::string first = v["reasons"].empty() ? "" : v["reasons"][0]["code"].get<std::string>();
        CHECK(first == e.first_code);
        first_ok += first == e.first_code;
        if (std::string(e.scenario).rfind("healthy", 0) == 0) {
            ++healthy;
            int loud = 0;
            for (const auto& r : v["reasons"]) loud += r["severity"] != "info";
            CHECK(loud == 0);  // checkpoints, start-up, an unused port: at most info
            healthy_clean += loud == 0;
        }
        if (label == "UNKNOWN") {
            CHECK(!v["unknown_reasons"].empty());
            CHECK(v["confidence"] == 0);
        } else {
            CHECK(v["confidence"].get<double>() > 0.5);  // a label is only given with data behind it
        }
        CHECK(v["samples"].get<int>() > 1);
    }
    CHECK(total >= 40);
    const std::string table = confusion_matrix(matrix, first_ok, total, healthy, healthy_clean);
    std::printf("scenario confusion matrix (%d scenarios):\n%s", total, table.c_str());
    std::ofstream(std::string(STALLSCOPE_BUILD_DIR) + "/scenario-confusion-matrix.md") << table;
    for (int e = 0; e < 4; ++e)
        for (int g = 0; g < 4; ++g)
            if (e != g)
                CHECK_MESSAGE(matrix[e][g] == 0, "expected " << kLabels[e] << ", replayed " << kLabels[g]);
}

TEST_CASE("the verdict names the worst port, GPU and interface of its scenario") {
    CHECK(replay("cnp_storm")["worst_port"] == "mlx5_0/1");
    const auto thermal = replay("thermal_throttle");
    CHECK(thermal["worst_gpu"] == "gpu-node-17:GPU 5");  // host:GPU n, as people name it, not the uuid
    CHECK(thermal["worst_gpu_uuid"] == "GPU-00000005-aaaa-bbbb-cccc-dddddddddddd");
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

TEST_CASE("a missing NCCL rank is named by its host when the NCCL log names it, not only by RAS's IP") {
    const auto v = replay("ras_rank_missing_persistent");
    REQUIRE(!v["reasons"].empty());
    CHECK(v["reasons"][0]["code"] == "nccl_rank_missing");
    CHECK(v["reasons"][0]["evidence"]["missing_hosts"] == "rank 5 on gpu-node-06");
    // one unanswered poll is not a missing rank
    const auto once = replay("healthy_ras_missing_once");
    CHECK(once["gpus_measured"] == 8);
    for (const auto& r : once["reasons"]) CHECK(r["code"] != "nccl_rank_missing");
}
