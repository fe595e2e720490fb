// Slurm 25.11+ gres Flags=env_uuid: the step's CUDA_VISIBLE_DEVICES holds GPU UUIDs, not indices. The
// binary on the DGX fixture, the fake NVML answering with the fixture's UUIDs, inside a Slurm job.
#include <doctest/doctest.h>

#include "libstallscope/model/snapshot_json.h"
#include "tests/cli/fixture_env.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::fixture_node_env;
using stallscope::test::run_process;

namespace {

// Two of the fixture's eight H100s (nvml.json), named the way env_uuid names them, in reverse order.
constexpr const char* kGpu2 = "GPU-3e7b0d92-c4a1-4f58-b2e6-19d8a7c5f046";
constexpr const char* kGpu6 = "GPU-0b9e4c63-5d7a-42f1-b8c0-7a3f2e6d4c19";

Json one_shot_in_job(const std::string& visible_devices) {
    auto env = fixture_node_env("dgx-h100");
    env.push_back("SLURM_JOB_ID=4242");
    env.push_back("SLURM_STEP_ID=0");
    env.push_back("CUDA_VISIBLE_DEVICES=" + visible_devices);
    const auto r = run_process({STALLSCOPE_EXE, "--json"}, env);
    REQUIRE(r.exit_code == 0);
    return Json::parse(r.out);
}

}  // namespace

TEST_CASE("a job whose CUDA_VISIBLE_DEVICES holds two GPU UUIDs is profiled on exactly those two GPUs") {
    const Json j = one_shot_in_job(std::string(kGpu6) + "," + kGpu2);
    REQUIRE(j["gpus"].size() == 2);
    CHECK(j["gpus"][0]["uuid"] == kGpu2);
    CHECK(j["gpus"][1]["uuid"] == kGpu6);
    for (const auto& w : j["warnings"])
        CHECK(w.get<std::string>().find("allocated GPUs") == std::string::npos);
}

TEST_CASE("UUIDs that are not this node's GPUs keep all eight and the warning says so") {
    const Json j = one_shot_in_job("GPU-00000000-0000-0000-0000-000000000000");
    CHECK(j["gpus"].size() == 8);
    bool warned = false;
    for (const auto& w : j["warnings"])
        warned = warned || w.get<std::string>().find("allocated GPUs") != std::string::npos;
    CHECK(warned);
}
