#include <doctest/doctest.h>

#include <algorithm>

#include "spank/helper_spec.h"

using namespace stallscope::spank;

namespace {
JobFacts job() {
    return {"42", "alice", "/home/alice/run", "/home/alice/run/sub", 0};
}
bool has(const std::vector<std::string>& env, const std::string& entry) {
    return std::find(env.begin(), env.end(), entry) != env.end();
}
}  // namespace

TEST_CASE("output_dir=submit (default) is <SLURM_SUBMIT_DIR>/stallscope-<jobid>") {
    CHECK(resolve_output_dir(default_config(), job()) == "/home/alice/run/stallscope-42");
}

TEST_CASE("output_dir=cwd uses the job's working directory") {
    PluginConfig c = parse_plugin_args({"output_dir=cwd"}).config;
    CHECK(resolve_output_dir(c, job()) == "/home/alice/run/sub/stallscope-42");
}

TEST_CASE("a missing or relative submit dir falls back to cwd, then /tmp") {
    JobFacts j = job();
    j.submit_dir = "";
    CHECK(resolve_output_dir(default_config(), j) == "/home/alice/run/sub/stallscope-42");
    j.cwd = "relative";
    CHECK(resolve_output_dir(default_config(), j) == "/tmp/stallscope-42");
}

TEST_CASE("an absolute output_dir template expands %u %j %%") {
    PluginConfig c = parse_plugin_args({"output_dir=/scratch/%u/ss/"}).config;
    CHECK(resolve_output_dir(c, job()) == "/scratch/root/ss/stallscope-42");
    c = parse_plugin_args({"output_dir=/scratch/%u/job-%j-100%%"}).config;
    CHECK(resolve_output_dir(c, job()) == "/scratch/root/job-42-100%");
}

TEST_CASE("%u comes from the job's uid, never from SLURM_JOB_USER in the job env") {
    PluginConfig c = parse_plugin_args({"output_dir=/scratch/%u"}).config;
    JobFacts j = job();
    j.user = "../../victim";  // what a job can put into SLURM_JOB_USER
    CHECK(resolve_output_dir(c, j) == "/scratch/root/stallscope-42");
    j.uid = 3999999999U;  // no passwd entry: the number
    CHECK(resolve_output_dir(c, j) == "/scratch/3999999999/stallscope-42");
    j.uid = kUnknownUid;
    CHECK(resolve_output_dir(c, j) == "/scratch/unknown-uid/stallscope-42");
}

TEST_CASE("record argv follows the helper exec contract exactly") {
    PluginConfig c = parse_plugin_args({"helper=/opt/bin/stallscope", "run_dir=/run/ss/"}).config;
    std::vector<std::string> want = {
        "/opt/bin/stallscope", "record", "--out-dir",         "/o/stallscope-42",
        "--interval-seconds",  "5",      "--lock-file",       "/run/ss/42/sampler.lock",
        "--liveness-fd",       "3",      "--timeline-format", "2"};
    CHECK(record_argv(c, "/o/stallscope-42", 5, "42") == want);
    // Sites whose own tools read plain JSON lines keep v1 with timeline_format=1.
    c = parse_plugin_args({"helper=/opt/bin/stallscope", "run_dir=/run/ss/", "timeline_format=1"}).config;
    want.back() = "1";
    CHECK(record_argv(c, "/o/stallscope-42", 5, "42") == want);
    CHECK(summarize_argv(c, "/o/d") == std::vector<std::string>{"/opt/bin/stallscope", "summarize", "/o/d"});
}

TEST_CASE("helper env: Slurm/GPU context and STALLSCOPE_* only, PATH fixed, first value wins") {
    std::vector<std::string> job_env = {"SLURM_JOB_ID=42",
                                        "CUDA_VISIBLE_DEVICES=0,1",
                                        "LD_PRELOAD=/evil.so",
                                        "PATH=/home/alice/bin",
                                        "STALLSCOPE_NVML_LIBRARY=/f.so",
                                        "SLURM_JOB_ID=43",
                                        "SLURM_STEP_GPUS=0,1",
                                        "HOME=/home/alice",
                                        "SLURM_CONF=/etc/other",
                                        "noequals",
                                        "STALLSCOPE=5"};
    std::vector<std::string> env = helper_env(job_env);
    CHECK(has(env, "SLURM_JOB_ID=42"));
    CHECK_FALSE(has(env, "SLURM_JOB_ID=43"));
    CHECK(has(env, "CUDA_VISIBLE_DEVICES=0,1"));
    CHECK(has(env, "SLURM_STEP_GPUS=0,1"));
    CHECK_FALSE(has(env, "STALLSCOPE_NVML_LIBRARY=/f.so"));  // a test seam: only with allow_test_env
    CHECK(has(env, "HOME=/home/alice"));
    CHECK(has(env, "PATH=/usr/local/bin:/usr/bin:/bin"));
    CHECK_FALSE(has(env, "PATH=/home/alice/bin"));
    CHECK_FALSE(has(env, "LD_PRELOAD=/evil.so"));
    CHECK_FALSE(has(env, "SLURM_CONF=/etc/other"));
    CHECK_FALSE(has(env, "STALLSCOPE=5"));
}

TEST_CASE("helper env: test seams pass only with allow_test_env=1, the NCCL knobs always") {
    std::vector<std::string> job_env = {"STALLSCOPE_NVML_LIBRARY=/home/u/evil.so",
                                        "STALLSCOPE_NVIDIA_SMI=/home/u/evil",
                                        "STALLSCOPE_SYSFS_ROOT=/home/u/sys",
                                        "STALLSCOPE_PROCFS_ROOT=/home/u/proc",
                                        "STALLSCOPE_ETHTOOL_ROOT=/home/u/e",
                                        "STALLSCOPE_DEV_ROOT=/home/u/dev",
                                        "STALLSCOPE_FAKE_NVML_FIXTURE=/home/u/f.json",
                                        "STALLSCOPE_KMSG_PATH=/home/u/kmsg",
                                        "STALLSCOPE_NCCL_LOGS=/home/u/*.log",
                                        "STALLSCOPE_NCCL_RAS=off",
                                        "STALLSCOPE_NCCL_ENV=1"};
    PluginConfig c = default_config();
    CHECK_FALSE(c.allow_test_env);
    std::vector<std::string> env = helper_env(job_env, c.allow_test_env);
    for (std::size_t i = 0; i < 8; ++i) CHECK_FALSE(has(env, job_env[i]));
    for (std::size_t i = 8; i < job_env.size(); ++i) CHECK(has(env, job_env[i]));
    c = parse_plugin_args({"allow_test_env=1"}).config;
    REQUIRE(c.allow_test_env);
    env = helper_env(job_env, c.allow_test_env);
    for (const std::string& e : job_env) CHECK(has(env, e));
}

TEST_CASE("set_env replaces or appends") {
    std::vector<std::string> env = {"A=1", "AB=2"};
    set_env(env, "A", "3");
    set_env(env, "C", "4");
    CHECK(env == std::vector<std::string>{"A=3", "AB=2", "C=4"});
}
