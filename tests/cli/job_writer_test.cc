// `stallscope record --job-writer`: at its stop the job's writer waits (bounded) for the other nodes'
// verdicts, merges the job dir once (summary.json/.txt) and prints the job segment on fd 3 (after its node
// segment, printed before the wait).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>

#include "tests/support/run_process.h"

using namespace stallscope::test;

namespace {

std::vector<std::string> writer_job_env(const std::string& node, const std::string& step_gpus) {
    const std::string root = std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/" + node;
    return {"STALLSCOPE_PROCFS_ROOT=" + root + "/proc",
            "STALLSCOPE_SYSFS_ROOT=" + root + "/sys",
            "STALLSCOPE_FAKE_NVML_FIXTURE=" + root + "/nvml.json",
            "STALLSCOPE_NVIDIA_SMI=/nonexistent",
            "SLURM_JOB_ID=4242",
            "SLURM_STEP_ID=0",
            "SLURM_NODEID=0",
            "SLURM_STEP_GPUS=" + step_gpus,
            "SLURM_JOB_GPUS="};
}

struct Recorded {
    std::string segment;
    double seconds = 0;
    int exit_code = -1;
};

// Runs a short recording with fd 3 on a pipe and returns what it printed there.
Recorded record(const std::string& out, std::vector<std::string> extra, const std::string& step_gpus = "",
                const std::string& nvml = FAKE_NVML_PATH) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::vector<std::string> argv = {
        STALLSCOPE_EXE, "record",        "--out-dir", out,       "--interval-seconds",
        "0.05",         "--liveness-fd", "3",         "--count", "3"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> env = writer_job_env("dgx-h100", step_gpus);
    env.push_back("STALLSCOPE_NVML_LIBRARY=" + nvml);
    const int pid = start_process(argv, env, fds[1]);
    ::close(fds[1]);
    Recorded r;
    char buf[2048];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        r.segment.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    r.exit_code = wait_process(pid, 30);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

}  // namespace

TEST_CASE("a helper that is not the writer prints its node segment, with GPUs measured/allocated") {
    const std::string out = make_temp_dir("node") + "/stallscope-4242";
    const Recorded r = record(out, {}, "0,1");
    CHECK(r.exit_code == 0);
    INFO(r.segment);
    CHECK(r.segment.find(" gpus=2/2 ") != std::string::npos);  // only the allocated GPUs are sampled
    CHECK(r.segment.find(" file=" + out + "/verdict.0.") != std::string::npos);
    CHECK_FALSE(exists(out + "/summary.json"));
    const Recorded blind = record(out + "-blind", {}, "0,1", "/nonexistent/libnvidia-ml.so.1");
    INFO(blind.segment);
    CHECK(blind.segment.find(" gpus=0/2 ") != std::string::npos);  // 2 allocated, none measured
}

TEST_CASE("the writer merges the job dir once and prints the job segment without waiting when all is in") {
    const std::string out = make_temp_dir("writer") + "/stallscope-4242";
    const Recorded r = record(out, {"--job-writer", "--merge-wait-seconds", "5"});
    CHECK(r.exit_code == 0);
    CHECK(r.seconds < 4);  // nothing missing: no wait
    CHECK(r.segment.rfind("stallscope/1 ", 0) == 0);
    CHECK(r.segment.find(" nodes=1 ") != std::string::npos);
    CHECK(r.segment.find(" missing=") == std::string::npos);
    CHECK(r.segment.find(" file=" + out + "/summary.json") != std::string::npos);
    CHECK(exists(out + "/summary.json"));
    CHECK(exists(out + "/summary.txt"));
}

TEST_CASE("a node whose timeline never gets a verdict is named missing after merge_wait, no longer") {
    const std::string out = make_temp_dir("missing") + "/stallscope-4242";
    REQUIRE(run_process({"/bin/mkdir", "-p", out}).exit_code == 0);
    std::ofstream(out + "/timeline.0.gpu-node-9.jsonl") << "";  // its helper died at once
    const Recorded r = record(out, {"--job-writer", "--merge-wait-seconds", "1"});
    CHECK(r.exit_code == 0);
    CHECK(r.seconds >= 1);
    CHECK(r.seconds < 5);
    CHECK(r.segment.find(" missing=gpu-node-9 ") != std::string::npos);
    CHECK(r.segment.find(" file=" + out + "/summary.json") != std::string::npos);
    CHECK(exists(out + "/summary.json"));
}

TEST_CASE("the writer prints its node segment before the merge, so a merge cut short still leaves it (I2)") {
    const std::string out = make_temp_dir("cut") + "/stallscope-4242";
    REQUIRE(run_process({"/bin/mkdir", "-p", out}).exit_code == 0);
    std::ofstream(out + "/timeline.0.gpu-node-9.jsonl") << "";  // a node without a verdict: the writer waits
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::vector<std::string> env = writer_job_env("dgx-h100", "0,1");
    env.push_back(std::string("STALLSCOPE_NVML_LIBRARY=") + FAKE_NVML_PATH);
    const int pid =
        start_process({STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.05",
                       "--liveness-fd", "3", "--count", "3", "--job-writer", "--merge-wait-seconds", "20"},
                      env, fds[1]);
    ::close(fds[1]);
    // The plugin's stop_timeout runs out during the merge wait: SIGKILL, as stop_helper does.
    std::string lines;
    char buf[2048];
    const auto t0 = std::chrono::steady_clock::now();
    while (lines.find('\n') == std::string::npos &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15)) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n <= 0) break;
        lines.append(buf, static_cast<std::size_t>(n));
    }
    ::kill(pid, SIGKILL);
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        lines.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    wait_process(pid, 10);
    INFO(lines);
    // One complete line, the node's own segment (no nodes=), printed before the 20 s wait.
    REQUIRE(lines.find('\n') != std::string::npos);
    CHECK(lines.rfind("stallscope/1 ", 0) == 0);
    CHECK(lines.find(" nodes=") == std::string::npos);
    CHECK(lines.find(" file=" + out + "/verdict.0.") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15));
}

TEST_CASE("the writer's fd-3 output: its node segment, then the merged job segment as the last line") {
    const std::string out = make_temp_dir("twolines") + "/stallscope-4242";
    const Recorded r = record(out, {"--job-writer", "--merge-wait-seconds", "5"});
    CHECK(r.exit_code == 0);
    INFO(r.segment);
    const auto nl = r.segment.find('\n');
    REQUIRE(nl != std::string::npos);
    CHECK(r.segment.substr(0, nl).find(" nodes=") == std::string::npos);
    const std::string last = r.segment.substr(nl + 1);
    REQUIRE_FALSE(last.empty());
    CHECK(last.rfind("stallscope/1 ", 0) == 0);
    CHECK(last.find(" nodes=1 ") != std::string::npos);
    CHECK(last.back() == '\n');
    CHECK(std::count(r.segment.begin(), r.segment.end(), '\n') == 2);
}
