#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "spank/helper_spec.h"
#include "spank/nccl_env.h"

using namespace stallscope::spank;

namespace {
using Env = std::vector<std::string>;
const char* kOut = "/home/alice/run/stallscope-42";

std::string value_of(const NcclEnvPlan& plan, const std::string& name) {
    for (const auto& [n, v] : plan.set)
        if (n == name) return v;
    return "<unset>";
}
bool sets(const NcclEnvPlan& plan, const std::string& name) {
    return value_of(plan, name) != "<unset>";
}
PluginConfig on(std::vector<std::string_view> more = {}) {
    more.push_back("nccl_env=1");
    ConfigParse p = parse_plugin_args(more);
    REQUIRE(p.errors.empty());
    return p.config;
}
}  // namespace

TEST_CASE("off by default: no plugstack key, no STALLSCOPE_NCCL_ENV -> nothing set") {
    NcclEnvPlan plan = plan_nccl_env(default_config(), {"SLURM_JOB_ID=42"}, 42, kOut);
    CHECK_FALSE(plan.enabled);
    CHECK(plan.set.empty());
    CHECK(plan.note.empty());
}

TEST_CASE("STALLSCOPE_NCCL_ENV=1 enables per job, =0 opts out of nccl_env=1, garbage is noted") {
    CHECK(plan_nccl_env(default_config(), {"STALLSCOPE_NCCL_ENV=1"}, 42, kOut).enabled);
    CHECK_FALSE(plan_nccl_env(on(), {"STALLSCOPE_NCCL_ENV=0"}, 42, kOut).enabled);
    NcclEnvPlan plan = plan_nccl_env(on(), {"STALLSCOPE_NCCL_ENV=yes"}, 42, kOut);
    CHECK(plan.enabled);
    CHECK(plan.note == "STALLSCOPE_NCCL_ENV='yes' is not 0 or 1; using nccl_env=1");
}

TEST_CASE("enabled with an empty job env: RAS, logs and flight recorder, no Inspector without a plugin") {
    NcclEnvPlan plan = plan_nccl_env(on(), {}, 42, kOut);
    REQUIRE(plan.enabled);
    CHECK(value_of(plan, "NCCL_RAS_ADDR") == "localhost:" + std::to_string(28100 + 42));
    CHECK(value_of(plan, "NCCL_RAS_ENABLE") == "1");
    CHECK(value_of(plan, "NCCL_DEBUG") == "WARN");
    CHECK(value_of(plan, "NCCL_DEBUG_FILE") == "/home/alice/run/stallscope-42/nccl.%h.%p.log");
    CHECK(value_of(plan, "TORCH_FR_DUMP_TEMP_FILE") == "/home/alice/run/stallscope-42/torch-fr-");
    CHECK(value_of(plan, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE") == "/home/alice/run/stallscope-42/torch-fr-");
    for (const char* n : {"NCCL_PROFILER_PLUGIN", "NCCL_INSPECTOR_ENABLE",
                          "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "NCCL_INSPECTOR_DUMP_DIR"})
        CHECK_FALSE(sets(plan, n));
}

TEST_CASE("user values win, including empty ones; related variables follow the user's choice") {
    Env user = {"NCCL_RAS_ADDR=[::1]:30000", "NCCL_RAS_ENABLE=0", "NCCL_DEBUG_FILE=/u/n.%h.log",
                "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/u/fr_"};
    NcclEnvPlan plan = plan_nccl_env(on(), user, 42, kOut);
    CHECK_FALSE(sets(plan, "NCCL_RAS_ADDR"));
    CHECK_FALSE(sets(plan, "NCCL_RAS_ENABLE"));
    CHECK_FALSE(sets(plan, "NCCL_DEBUG_FILE"));
    CHECK(value_of(plan, "NCCL_DEBUG") == "WARN");
    // Either flight recorder name set by the user: neither is touched (one overrides the other).
    CHECK_FALSE(sets(plan, "TORCH_FR_DUMP_TEMP_FILE"));
    CHECK_FALSE(sets(plan, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"));
    // The user's own NCCL_DEBUG keeps going where they expect it (stdout): no file forced on it.
    plan = plan_nccl_env(on(), {"NCCL_DEBUG=INFO", "NCCL_RAS_ADDR="}, 42, kOut);
    CHECK_FALSE(sets(plan, "NCCL_DEBUG"));
    CHECK_FALSE(sets(plan, "NCCL_DEBUG_FILE"));
    CHECK_FALSE(sets(plan, "NCCL_RAS_ADDR"));
    // Nothing in a plan is ever already in the job env.
    for (const auto& [n, v] : plan_nccl_env(on({"nccl_inspector_plugin=/p.so"}), user, 42, kOut).set)
        CHECK_FALSE(find_env(user, n, nullptr));
}

TEST_CASE("Inspector only with nccl_inspector_plugin, never over the user's profiler or ENABLE=0") {
    PluginConfig c = on({"nccl_inspector_plugin=/opt/nccl/libnccl-profiler-inspector.so"});
    NcclEnvPlan plan = plan_nccl_env(c, {}, 42, kOut);
    CHECK(value_of(plan, "NCCL_PROFILER_PLUGIN") == "/opt/nccl/libnccl-profiler-inspector.so");
    CHECK(value_of(plan, "NCCL_INSPECTOR_ENABLE") == "1");
    CHECK(value_of(plan, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS") == "1000000");
    CHECK(value_of(plan, "NCCL_INSPECTOR_DUMP_DIR") == "/home/alice/run/stallscope-42/nccl-inspector");
    plan = plan_nccl_env(c, {"NCCL_PROFILER_PLUGIN=/mine.so"}, 42, kOut);
    CHECK_FALSE(sets(plan, "NCCL_PROFILER_PLUGIN"));
    CHECK_FALSE(sets(plan, "NCCL_INSPECTOR_ENABLE"));
    CHECK_FALSE(sets(plan, "NCCL_INSPECTOR_DUMP_DIR"));
    plan = plan_nccl_env(c, {"NCCL_INSPECTOR_ENABLE=0"}, 42, kOut);
    CHECK_FALSE(sets(plan, "NCCL_PROFILER_PLUGIN"));
    plan = plan_nccl_env(c, {"NCCL_INSPECTOR_DUMP_DIR=/u/insp"}, 42, kOut);
    CHECK(sets(plan, "NCCL_PROFILER_PLUGIN"));
    CHECK_FALSE(sets(plan, "NCCL_INSPECTOR_DUMP_DIR"));
    CHECK_FALSE(parse_plugin_args({"nccl_inspector_plugin=relative.so"}).errors.empty());
}

TEST_CASE("RAS port: inside the documented range, distinct for consecutive jobs, range configurable") {
    PluginConfig c = on();
    std::set<unsigned> ports;
    for (std::uint32_t job = 1000; job < 1000 + 1024; ++job) {
        unsigned p = nccl_ras_port(c, job);
        CHECK(p >= 28100);
        CHECK(p <= 29123);
        ports.insert(p);
    }
    CHECK(ports.size() == 1024);  // any 1024 consecutive job ids never share a port
    CHECK(nccl_ras_port(c, 0xffffffffu) <= 29123);
    c = on({"nccl_ras_ports=40000-40007"});
    CHECK(nccl_ras_port(c, 8) == 40000);
    CHECK(nccl_ras_port(c, 13) == 40005);
    CHECK(plan_nccl_env(c, {}, 13, kOut).set.front().second == "localhost:40005");
    for (std::string_view bad : {"nccl_ras_ports=5", "nccl_ras_ports=40010-40000", "nccl_ras_ports=80-90",
                                 "nccl_ras_ports=40000-70000", "nccl_env=2"}) {
        ConfigParse p = parse_plugin_args({bad});
        CHECK(p.errors.size() == 1);
        CHECK(p.config.nccl_ras_port_first == 28100);
        CHECK_FALSE(p.config.nccl_env);
    }
}

TEST_CASE("debug file glob: %h short host, %p and others *, %% literal, relative made absolute") {
    CHECK(nccl_debug_glob("/o/nccl.%h.%p.log", "node1.cluster.local", "/w") == "/o/nccl.node1.*.log");
    CHECK(nccl_debug_glob("/o/n.%h.%p.%x.100%%", "", "/w") == "/o/n.*.*.*.100%");
    CHECK(nccl_debug_glob("logs/n.%p", "h", "/w/") == "/w/logs/n.*");
}

TEST_CASE("helper env: NCCL variables pass the allowlist, relative paths absolute, logs glob if unset") {
    Env job = {"NCCL_RAS_ADDR=localhost:28142", "NCCL_RAS_ENABLE=1", "NCCL_DEBUG_FILE=d/nccl.%h.%p.log",
               "NCCL_INSPECTOR_DUMP_DIR=insp",  "NCCL_DEBUG=WARN",   "TORCH_FR_DUMP_TEMP_FILE=/o/fr-"};
    Env env = helper_env(job);
    add_helper_nccl_env(env, "node1", "/w");
    auto has = [&](const std::string& e) { return std::find(env.begin(), env.end(), e) != env.end(); };
    CHECK(has("NCCL_RAS_ADDR=localhost:28142"));
    CHECK(has("NCCL_RAS_ENABLE=1"));
    CHECK(has("NCCL_DEBUG_FILE=/w/d/nccl.%h.%p.log"));
    CHECK(has("NCCL_INSPECTOR_DUMP_DIR=/w/insp"));
    CHECK(has("STALLSCOPE_NCCL_LOGS=/w/d/nccl.node1.*.log"));
    CHECK_FALSE(has("NCCL_DEBUG=WARN"));
    CHECK_FALSE(has("TORCH_FR_DUMP_TEMP_FILE=/o/fr-"));
    env = helper_env({"NCCL_DEBUG_FILE=/a.%p", "STALLSCOPE_NCCL_LOGS=/mine/*.log"});
    add_helper_nccl_env(env, "node1", "/w");
    CHECK(std::count(env.begin(), env.end(), "STALLSCOPE_NCCL_LOGS=/mine/*.log") == 1);
    env = helper_env({});
    add_helper_nccl_env(env, "node1", "/w");
    CHECK_FALSE(find_env(env, "STALLSCOPE_NCCL_LOGS", nullptr));
}
