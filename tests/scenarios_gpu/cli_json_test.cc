// `stallscope --json` on the issue-15 fixtures, through the real binary (fork/exec, no shell) with the
// fake libnvidia-ml: every new field is in the output, or absent/null with a warning saying why.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

std::string read_all(int fd) {
    std::string s;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    return s;
}

// Runs `stallscope --json` with exactly `env` as its environment.
json stallscope_json(std::vector<std::string> env) {
    int out_pipe[2];
    REQUIRE(::pipe(out_pipe) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(out_pipe[1], STDOUT_FILENO);
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        static std::string exe = STALLSCOPE_EXE, flag = "--json";
        char* argv[] = {exe.data(), flag.data(), nullptr};
        std::vector<char*> envp;
        for (auto& e : env) envp.push_back(e.data());
        envp.push_back(nullptr);
        ::execve(exe.c_str(), argv, envp.data());
        ::_exit(127);
    }
    ::close(out_pipe[1]);
    const std::string out = read_all(out_pipe[0]);
    ::close(out_pipe[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    json j = json::parse(out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    return j;
}

std::vector<std::string> node_env(const std::string& nvml_fixture, const std::string& visible) {
    const std::string node = std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/h100-slurm-step";
    return {"STALLSCOPE_PROCFS_ROOT=" + node + "/proc",
            "STALLSCOPE_SYSFS_ROOT=" + node + "/sys",
            "STALLSCOPE_NVML_LIBRARY=" + std::string(STALLSCOPE_FAKE_NVML_PATH),
            "STALLSCOPE_FAKE_NVML_FIXTURE=" + std::string(STALLSCOPE_FIXTURES_DIR) + "/" + nvml_fixture,
            "STALLSCOPE_FAKE_NVML_SLEEP_MS=0",
            "SLURM_JOB_ID=4242",
            "SLURM_STEP_ID=0",
            "CUDA_VISIBLE_DEVICES=" + visible};
}

bool warned(const json& j, const std::string& needle) {
    for (const auto& w : j["warnings"])
        if (w.get<std::string>().find(needle) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("stallscope --json on a Slurm step with two H100s shows GPM, NVLink/PCIe, processes, job cgroup") {
    const json j = stallscope_json(node_env("nodes/h100-slurm-step/nvml.json", "0,1"));
    REQUIRE(j["gpus"].size() == 2);
    const json& g = j["gpus"][0];
    for (const char* key :
         {"sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_bandwidth_pct", "pcie_tx_mib_per_s",
          "pcie_rx_mib_per_s", "nvlink_tx_mib_per_s", "nvlink_rx_mib_per_s"}) {
        CAPTURE(key);
        CHECK(g["gpm"][key].is_number());
    }
    for (const char* key : {"nvlink_link_count", "nvlink_tx_bytes", "nvlink_rx_bytes", "nvlink_crc_errors",
                            "nvlink_replay_errors", "nvlink_recovery_errors", "pcie_replay_count",
                            "pcie_tx_bytes", "pcie_rx_bytes"}) {
        CAPTURE(key);
        CHECK(g["interconnect"][key].is_number_unsigned());
    }
    REQUIRE(g["processes"].size() == 2);
    CHECK(g["processes"][0]["owner"] == "step");
    CHECK(g["processes"][1]["owner"] == "other_job");
    CHECK(g["processes"][1]["job_id"] == "4243");
    const json& c = j["job_cgroup"];
    CHECK(c["job_id"] == "4242");
    for (const char* key :
         {"memory_current_bytes", "memory_peak_bytes", "memory_max_bytes", "memory_oom_kill_events",
          "cpu_usage_usec", "cpu_nr_throttled", "cpu_throttled_usec"}) {
        CAPTURE(key);
        CHECK(c[key].is_number_unsigned());
    }
    CHECK(c["psi"]["cpu_some_avg10"].is_number());
    // The other job's process on GPU 0 is a reason of its own.
    bool foreign = false;
    for (const auto& r : j["profile"]["reasons"]) foreign |= r["code"] == "gpu_foreign_process";
    CHECK(foreign);
    CHECK(j["profile"]["label"] == "SLOW");
}

TEST_CASE("stallscope --json on A100s: no GPM key, and a warning saying why") {
    const json j = stallscope_json(node_env("nvml/a100-no-gpm.json", "0,1"));
    REQUIRE(j["gpus"].size() == 2);
    CHECK_FALSE(j["gpus"][0].contains("gpm"));
    CHECK(warned(j, "GPM unsupported on GPU 0, GPU 1"));
    CHECK(j["gpus"][0]["interconnect"]["pcie_tx_bytes"].is_null());
    CHECK(warned(j, "field values 197,198 unavailable"));
}

TEST_CASE("stallscope --json on an H100 in MIG mode: the step's slice, parent gauges, GPM per instance") {
    const json j =
        stallscope_json(node_env("nvml/h100-mig.json", "MIG-9a0b2e6f-3c18-5d74-8f25-6b9e1a4c7d80"));
    REQUIRE(j["gpus"].size() == 1);
    const json& g = j["gpus"][0];
    CHECK(g["uuid"] == "MIG-9a0b2e6f-3c18-5d74-8f25-6b9e1a4c7d80");
    CHECK(g["utilization_pct"].is_null());
    CHECK(g["mig"]["gauges_from_parent"] == true);
    CHECK(g["mig"]["gpu_instance_id"] == 2);
    CHECK(g["gpm"]["sm_active_pct"] == 0.0);
    CHECK(g["power_w"].is_number());
}
