// GPU-depth scenarios (issue 15): each synthetic timeline in tests/scenarios_gpu/*.jsonl (written by
// generate.py) is read line by line with snapshot_from_json and profiled by the real Profiler -- the path
// `stallscope replay` takes for a line its fast reader does not read -- and the step verdict is checked:
// label, reasons[0].code, the bottleneck hint, and codes that must NOT appear.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/rules/profiler.h"

using namespace stallscope;

namespace {

struct Expectation {
    const char* scenario;
    const char* label;
    const char* first_code;  // "" = no reasons at all
    const char* hint;
    const char* absent_code;  // a reason this scenario must not give ("" = none)
};

// clang-format off
const Expectation kScenarios[] = {
    {"gpm_compute_bound",   "FAST",      "",                    "compute", "gpu_low_sm_activity"},
    {"gpm_memory_bound",    "FAST",      "",                    "memory",  ""},
    {"gpm_busy_wait_hang",  "FAIL_RISK", "gpu_busy_wait_hang",  "",        "gpu_idle"},
    {"gpm_input_starved",   "SLOW",      "gpu_low_sm_activity", "input",   "gpu_low_utilization"},
    {"mig_idle_slice",      "SLOW",      "gpu_idle",            "",        ""},
    {"job_oom_kill",        "FAIL_RISK", "job_oom_kill",        "memory",  "host_oom_kill"},
    {"other_job_oom_kill",  "FAST",      "",                    "compute", "host_oom_kill"},
    {"job_cpu_throttled",   "SLOW",      "job_cpu_throttled",   "input",   ""},
    {"nvlink_crc_errors",   "SLOW",      "gpu_nvlink_errors",   "network", ""},
    {"nvlink_recovery",     "FAIL_RISK", "gpu_nvlink_errors",   "network", ""},
    {"foreign_gpu_process", "SLOW",      "gpu_foreign_process", "compute", ""},
    {"throttled_starves_gpus", "SLOW",   "job_cpu_throttled",   "",        ""},
    // issue 38
    {"mig_healthy",         "FAST",      "",                    "compute", "gpu_telemetry_missing"},
    {"foreign_process_grows", "SLOW",    "gpu_foreign_process", "compute", ""},
    {"oom_kill_hangs_ranks", "FAIL_RISK", "job_oom_kill",       "",        ""},
};
// clang-format on

StepVerdict profile_timeline(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    Profiler profiler;
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
        std::vector<std::string> problems;
        Snapshot s = snapshot_from_json(Json::parse(line), problems);
        CHECK_MESSAGE(problems.empty(), path, ": ", problems.empty() ? "" : problems.front());
        profiler.observe(std::move(s));
        ++lines;
    }
    CHECK(lines >= 8);
    return profiler.verdict();
}

bool has_code(const StepVerdict& v, const std::string& code) {
    return std::any_of(v.reasons.begin(), v.reasons.end(),
                       [&](const ReasonSummary& r) { return r.reason.code == code; });
}

}  // namespace

TEST_CASE("every GPU-depth scenario gives its verdict, root cause and bottleneck hint") {
    for (const auto& e : kScenarios) {
        const std::string scenario = e.scenario;
        CAPTURE(scenario);
        const StepVerdict v =
            profile_timeline(std::string(STALLSCOPE_SCENARIOS_GPU_DIR) + "/" + e.scenario + ".jsonl");
        CHECK(v.label == e.label);
        if (*e.first_code == 0) {
            CHECK(v.reasons.empty());
        } else {
            REQUIRE_FALSE(v.reasons.empty());
            CHECK(v.reasons[0].reason.code == e.first_code);
        }
        if (*e.hint) CHECK(v.bottleneck_hint == e.hint);
        if (*e.absent_code) CHECK_FALSE(has_code(v, e.absent_code));
    }
}

TEST_CASE("CPU throttling of the job is the root cause, the GPUs' low SM activity its symptom") {
    const StepVerdict v =
        profile_timeline(std::string(STALLSCOPE_SCENARIOS_GPU_DIR) + "/throttled_starves_gpus.jsonl");
    REQUIRE(v.reasons.size() >= 2);
    CHECK(v.reasons[0].reason.code == "job_cpu_throttled");
    CHECK(v.reasons[1].reason.code == "gpu_low_sm_activity");
    CHECK(v.bottleneck_hint == "input");
    // From the second sample on (CPU throttling is a delta), the symptom says what the GPUs wait for.
    const auto& worst = v.reasons[1];
    CHECK(worst.samples >= 7);
}

TEST_CASE("the idle MIG slice is named; the slice without utilization but with GPM work is not idle") {
    const StepVerdict v =
        profile_timeline(std::string(STALLSCOPE_SCENARIOS_GPU_DIR) + "/mig_idle_slice.jsonl");
    REQUIRE_FALSE(v.reasons.empty());
    const Reason& idle = v.reasons[0].reason;
    CHECK(idle.subject == "MIG-00000001-1111-5000-8000-000000000000");
    CHECK(std::get<double>(idle.evidence.at("gpus_idle")) == 1);
    CHECK(std::get<double>(idle.evidence.at("gpus_total")) == 2);
    CHECK(idle.message.find("SM activity, GPM") != std::string::npos);
    // Both slices carry their parent's index 0: the slice is named by its GPU instance (issue 38).
    CHECK(idle.message.find("GPU 0/GI 2/CI 0") != std::string::npos);
    CHECK(v.worst_gpu == "gpu-node-17:GPU 0/GI 2/CI 0");
}

TEST_CASE("a healthy MIG job (no utilization from NVML, GPM busy) is FAST: GPM SM activity is measured") {
    const StepVerdict v = profile_timeline(std::string(STALLSCOPE_SCENARIOS_GPU_DIR) + "/mig_healthy.jsonl");
    CHECK(v.label == "FAST");
    CHECK(v.gpus_measured == 2);
    CHECK(v.confidence > 0.6);
}

TEST_CASE("a foreign process is reported with its peak memory and how long it stayed, not as first seen") {
    const StepVerdict v =
        profile_timeline(std::string(STALLSCOPE_SCENARIOS_GPU_DIR) + "/foreign_process_grows.jsonl");
    REQUIRE_FALSE(v.reasons.empty());
    const Reason& r = v.reasons[0].reason;
    CAPTURE(r.message);
    CHECK(r.message.find("6.5 GiB") != std::string::npos);
    CHECK(r.message.find("0.55") == std::string::npos);
    CHECK(r.message.find("11 min") != std::string::npos);
    CHECK(std::get<double>(r.evidence.at("peak_memory_bytes")) ==
          doctest::Approx(6.5 * (1 << 30)).epsilon(0.001));
    CHECK(std::get<double>(r.evidence.at("present_seconds")) == doctest::Approx(650));
}

TEST_CASE("after a job OOM kill that hangs the other ranks, worst_gpu is the GPU whose rank died") {
    const StepVerdict v =
        profile_timeline(std::string(STALLSCOPE_SCENARIOS_GPU_DIR) + "/oom_kill_hangs_ranks.jsonl");
    REQUIRE(v.reasons.size() >= 2);
    CHECK(v.reasons[0].reason.code == "job_oom_kill");
    CHECK(v.reasons[0].reason.message.find("rank on GPU 2 is gone") != std::string::npos);
    CHECK(std::any_of(v.reasons.begin(), v.reasons.end(),
                      [](const ReasonSummary& r) { return r.reason.code == "gpu_busy_wait_hang"; }));
    CHECK(v.worst_gpu == "gpu-node-17:GPU 2");
    CHECK(v.worst_gpu_uuid == "GPU-00000002-0000-4000-8000-000000000000");
}

TEST_CASE("the GPM busy-wait hang is found although power alone says the GPUs work") {
    const StepVerdict v =
        profile_timeline(std::string(STALLSCOPE_SCENARIOS_GPU_DIR) + "/gpm_busy_wait_hang.jsonl");
    REQUIRE_FALSE(v.reasons.empty());
    const Reason& hang = v.reasons[0].reason;
    CHECK(std::get<double>(hang.evidence.at("sm_active_pct")) == doctest::Approx(1.5));
    CHECK(std::get<double>(hang.evidence.at("gpus_hung")) == 4);
    CHECK(hang.message.find("SM activity") != std::string::npos);
}
