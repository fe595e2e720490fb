#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "libstallscope/sources/context/context_parsers.h"
#include "libstallscope/sources/context/context_source.h"
#include "libstallscope/sources/factories.h"
#include "node_test_util.h"

using namespace stallscope;
using namespace node_test;

namespace {

Environment slurm_step_env() {
    return {{"SLURM_JOB_ID", "4242"},
            {"SLURM_STEP_ID", "3"},
            {"SLURM_JOB_NAME", "llama-70b"},
            {"SLURM_JOB_USER", "alice"},
            {"USER", "someone-else"},
            {"SLURM_JOB_NODELIST", "gpu[001-004]"},
            {"SLURM_NODEID", "2"},
            {"SLURM_STEP_GPUS", "0,1,2,3"},
            {"SLURM_JOB_GPUS", "0,1,2,3,4,5,6,7"},
            {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}};
}

// A fake /proc with one directory per pid and its NUL-separated environ.
void add_process(const TempDir& dir, int pid, const std::string& text) {
    write_file(dir.path() + "/proc/" + std::to_string(pid) + "/environ", text);
}

ContextOptions options_with(Environment env) {
    ContextOptions options;
    options.environment = std::move(env);
    options.hostname = "node-a";
    return options;
}

Roots proc_root(const TempDir& dir) {
    Roots roots;
    roots.procfs = dir.path() + "/proc";
    roots.sysfs = dir.path() + "/sys";
    return roots;
}

// NUL-separated NAME=value entries, as /proc/<pid>/environ holds them.
std::string environ_text(std::initializer_list<std::string> entries) {
    std::string out;
    for (const auto& e : entries) out.append(e).push_back('\0');
    return out;
}

const std::string kJobEnviron =
    environ_text({"HOME=/home/bob", "SLURM_JOB_ID=777", "SLURM_STEP_ID=0", "SLURM_JOB_USER=bob",
                  "SLURM_JOB_GPUS=4,5", "CUDA_VISIBLE_DEVICES=0,1"});

}  // namespace

TEST_CASE("environ text keeps only the context variables") {
    const std::string text("PATH=/bin\0SLURM_JOB_ID=42\0SLURM_JOB_NAME=train=v2\0garbage\0=x\0AWS_SECRET=s\0",
                           73);
    const Environment env = parse_environ(text);
    CHECK(env.size() == 2);
    CHECK(env.at("SLURM_JOB_ID") == "42");
    CHECK(env.at("SLURM_JOB_NAME") == "train=v2");
    CHECK(env.count("AWS_SECRET") == 0);
    CHECK(parse_environ("").empty());
}

TEST_CASE("device lists split on commas, trimmed, empty entries dropped") {
    CHECK(split_list("0,1, 2,,3") == std::vector<std::string>{"0", "1", "2", "3"});
    CHECK(split_list("GPU-8f3a,GPU-11c2") == std::vector<std::string>{"GPU-8f3a", "GPU-11c2"});
    CHECK(split_list("").empty());
}

TEST_CASE("a Slurm step environment gives the whole job context") {
    const JobContext ctx = slurm_context_from_environment(slurm_step_env());
    CHECK(ctx.scheduler == "slurm");
    CHECK(ctx.job_id == "4242");
    CHECK(ctx.step_id == "3");
    CHECK(ctx.job_name == "llama-70b");
    CHECK(ctx.user == "alice");  // SLURM_JOB_USER wins over USER
    CHECK(ctx.nodelist == "gpu[001-004]");
    CHECK(ctx.node_id == "2");
    CHECK(ctx.gpus == std::vector<std::string>{"0", "1", "2", "3"});  // the step's, not the job's
    CHECK(ctx.visible_devices == std::vector<std::string>{"0", "1", "2", "3"});
}

TEST_CASE("a batch script without step GPUs falls back to the job's GPUs and USER") {
    const JobContext ctx = slurm_context_from_environment(
        {{"SLURM_JOBID", "9"}, {"USER", "carol"}, {"SLURM_JOB_GPUS", "6,7"}, {"ROCR_VISIBLE_DEVICES", "1"}});
    CHECK(ctx.scheduler == "slurm");
    CHECK(ctx.job_id == "9");
    CHECK(ctx.user == "carol");
    CHECK(ctx.gpus == std::vector<std::string>{"6", "7"});
    CHECK(ctx.visible_devices == std::vector<std::string>{"1"});
    CHECK(ctx.step_id.empty());
}

TEST_CASE("no Slurm job in the environment means scheduler none, user still known") {
    const JobContext ctx = slurm_context_from_environment({{"USER", "dave"}});
    CHECK(ctx.scheduler == "none");
    CHECK(ctx.user == "dave");
    CHECK(ctx.job_id.empty());
    CHECK(ctx.gpus.empty());
}

TEST_CASE("inside a Slurm step the context comes from our own environment, no /proc scan") {
    TempDir dir;
    add_process(dir, 100, kJobEnviron);  // another job's process: must not be used
    auto source = make_context_source(proc_root(dir), options_with(slurm_step_env()));
    CHECK(source->name() == "context");
    const Snapshot snap = sample(*source);
    CHECK(snap.context.scheduler == "slurm");
    CHECK(snap.context.job_id == "4242");
    CHECK(snap.warnings.empty());
}

TEST_CASE("a node-level run finds the job from a process environment of our uid") {
    TempDir dir;
    add_process(dir, 100, environ_text({"USER=bob", "HOME=/home/bob"}));
    add_process(dir, 200, kJobEnviron);
    add_process(dir, 300, environ_text({"SHELL=/bin/bash"}));
    auto source = make_context_source(proc_root(dir), options_with({{"USER", "bob"}}));
    const Snapshot snap = sample(*source);
    CHECK(snap.context.scheduler == "slurm");
    CHECK(snap.context.job_id == "777");
    CHECK(snap.context.step_id == "0");
    CHECK(snap.context.user == "bob");
    CHECK(snap.context.gpus == std::vector<std::string>{"4", "5"});
    CHECK(snap.context.visible_devices == std::vector<std::string>{"0", "1"});
}

TEST_CASE("the process scan is bounded and newest first") {
    TempDir dir;
    add_process(dir, 10, kJobEnviron);  // the oldest process holds the job
    add_process(dir, 20, "A=1");
    add_process(dir, 30, "B=2");
    ContextOptions options = options_with({});
    options.proc_scan_max_processes = 2;
    CHECK(sample(*make_context_source(proc_root(dir), options)).context.scheduler == "none");
    options.proc_scan_max_processes = 3;
    CHECK(sample(*make_context_source(proc_root(dir), options)).context.job_id == "777");
}

TEST_CASE("the process scan runs once per N samples, not every sample") {
    TempDir dir;
    ContextOptions options = options_with({});
    options.proc_scan_every = 3;
    options.proc_scan_min_seconds = 0;  // samples here are microseconds apart
    auto source = make_context_source(proc_root(dir), options);
    CHECK(sample(*source).context.scheduler == "none");  // sample 1 scans: nothing yet
    add_process(dir, 500, kJobEnviron);                  // the job starts
    CHECK(sample(*source).context.scheduler == "none");  // samples 2 and 3 reuse the result
    CHECK(sample(*source).context.scheduler == "none");
    CHECK(sample(*source).context.job_id == "777");         // sample 4 scans again
    std::filesystem::remove_all(dir.path() + "/proc/500");  // the job ends
    CHECK(sample(*source).context.job_id == "777");
    CHECK(sample(*source).context.job_id == "777");
    CHECK(sample(*source).context.scheduler == "none");
}

TEST_CASE("at a fast cadence the process scan also waits proc_scan_min_seconds") {
    TempDir dir;
    ContextOptions options = options_with({});
    options.proc_scan_every = 1;
    options.proc_scan_min_seconds = 1.0;
    auto source = make_context_source(proc_root(dir), options);
    CHECK(sample(*source).context.scheduler == "none");
    add_process(dir, 500, kJobEnviron);
    for (int i = 0; i < 20; ++i) REQUIRE(sample(*source).context.scheduler == "none");  // due by count only
    std::this_thread::sleep_for(std::chrono::milliseconds(1050));
    CHECK(sample(*source).context.job_id == "777");
}

TEST_CASE("a pod reports kubernetes with its namespace and pod name") {
    TempDir dir;
    const std::string ns_file = dir.path() + "/namespace";
    write_file(ns_file, "ml-team\n");
    ContextOptions options = options_with({{"HOSTNAME", "trainer-0"}});
    options.kubernetes_namespace_file = ns_file;
    Snapshot snap = sample(*make_context_source(proc_root(dir), options));
    CHECK(snap.context.scheduler == "kubernetes");
    CHECK(snap.context.namespace_name == "ml-team");
    CHECK(snap.context.pod == "trainer-0");
    // The downward API's POD_NAME wins; without either the hostname is the pod name.
    options.environment = {{"POD_NAME", "trainer-7"}, {"HOSTNAME", "x"}};
    CHECK(sample(*make_context_source(proc_root(dir), options)).context.pod == "trainer-7");
    options.environment = {};
    CHECK(sample(*make_context_source(proc_root(dir), options)).context.pod == "node-a");
    // Slurm inside a pod (Slinky, soperator): scheduler slurm, pod fields kept.
    options.environment = slurm_step_env();
    snap = sample(*make_context_source(proc_root(dir), options));
    CHECK(snap.context.scheduler == "slurm");
    CHECK(snap.context.job_id == "4242");
    CHECK(snap.context.namespace_name == "ml-team");
    CHECK(snap.context.pod == "node-a");
}

TEST_CASE("without the service-account namespace file it is not kubernetes") {
    TempDir dir;
    ContextOptions options = options_with({{"HOSTNAME", "trainer-0"}});
    options.kubernetes_namespace_file = dir.path() + "/absent";
    const Snapshot snap = sample(*make_context_source(proc_root(dir), options));
    CHECK(snap.context.scheduler == "none");
    CHECK(snap.context.pod.empty());
    CHECK(snap.warnings.empty());
}

TEST_CASE("in fixture mode the namespace file is looked up beside the fixture proc") {
    TempDir dir;
    write_file(dir.path() + "/proc/loadavg", "0 0 0 1/1 1\n");
    write_file(dir.path() + "/var/run/secrets/kubernetes.io/serviceaccount/namespace", "research\n");
    const ContextOptions options = context_options_for(proc_root(dir));
    CHECK(options.kubernetes_namespace_file ==
          dir.path() + "/var/run/secrets/kubernetes.io/serviceaccount/namespace");
    const Snapshot snap = sample(*make_context_source(proc_root(dir)));
    CHECK(snap.context.namespace_name == "research");
    CHECK(context_options_for(Roots{}).kubernetes_namespace_file == kKubernetesNamespaceFile);
}

TEST_CASE("the context source on each fixture node runs without warnings") {
    for (const char* node : {"dgx-h100", "roce", "vm", "garbage", "amd-mi300"}) {
        CAPTURE(node);
        auto source = make_context_source(fixture_roots(node), options_with({{"USER", "eve"}}));
        const Snapshot snap = sample(*source);
        CHECK(snap.warnings.empty());
        CHECK(snap.context.scheduler == "none");  // no fixture proc holds a job environment
        CHECK(snap.context.user == "eve");
    }
}
