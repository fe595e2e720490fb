// GPM, NVLink/PCIe field values, GPU processes and MIG through the real dlopen path, against the fake
// libnvidia-ml.so.1 (tests/fake_nvml/fake_nvml_depth.cc); and the JSON round trip of every new field.
#include <dlfcn.h>

#include <doctest/doctest.h>
#include <filesystem>
#include <thread>

#include "gpu_test_util.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/sources/factories.h"

using namespace stallscope;
using gpu_test::any_contains;
using gpu_test::count_containing;
using gpu_test::fixture;
using gpu_test::ScopedEnv;

namespace {

Roots fake_roots() {
    Roots roots;
    roots.nvml_library = STALLSCOPE_FAKE_NVML_PATH;
    roots.nvidia_smi = "/nonexistent/nvidia-smi";
    return roots;
}

Snapshot depth_sample(Source& source, std::vector<std::string> visible = {}) {
    Snapshot snapshot;
    snapshot.context.visible_devices = std::move(visible);
    source.sample(snapshot);
    return snapshot;
}

// The fake's test hook: how many times a query reached a device. Loads the fake when no source has yet
// (not RTLD_NOLOAD): run alone, or first, a test asks before its source's first sample loaded it.
unsigned long long fake_depth_query_count(const char* query) {
    void* handle = ::dlopen(STALLSCOPE_FAKE_NVML_PATH, RTLD_NOW);
    REQUIRE(handle != nullptr);
    auto fn = reinterpret_cast<unsigned long long (*)(const char*)>(
        ::dlsym(handle, "stallscope_fake_nvml_query_count"));
    REQUIRE(static_cast<bool>(fn));
    const auto count = fn(query);
    ::dlclose(handle);
    return count;
}

void wait_gpm_interval() {
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
}

}  // namespace

TEST_CASE("GPM on an H100: SM, occupancy, tensor, DRAM, PCIe and NVLink activity in the very first sample") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nodes/h100-slurm-step/nvml.json"));
    auto source = make_nvidia_source(fake_roots());
    const auto samples_before = fake_depth_query_count("gpm_sample");
    const Snapshot first = depth_sample(*source);
    CHECK(first.warnings.empty());
    REQUIRE(first.gpus.size() == 2);
    REQUIRE(first.gpus[0].gpm.has_value());
    const GpmMetrics& m = *first.gpus[0].gpm;
    CHECK(m.sm_active_pct == doctest::Approx(88.5));
    CHECK(m.sm_occupancy_pct == doctest::Approx(45.25));
    CHECK(m.tensor_active_pct == doctest::Approx(62));
    CHECK(m.dram_bandwidth_pct == doctest::Approx(41.5));
    CHECK(m.pcie_tx_mib_per_s == doctest::Approx(912));
    CHECK(m.pcie_rx_mib_per_s == doctest::Approx(1204.5));
    CHECK(m.nvlink_tx_mib_per_s == doctest::Approx(48190));
    CHECK(m.nvlink_rx_mib_per_s == doctest::Approx(48211));
    CHECK(first.gpus[1].gpm->sm_active_pct == doctest::Approx(87));
    // One baseline sample plus one paired sample per GPU (the fake refuses pairs < 100 ms apart).
    CHECK(fake_depth_query_count("gpm_sample") - samples_before == 4);

    // Asked again at once: too soon for a pair, so nothing is taken and GPM is absent, not 0.
    const Snapshot too_soon = depth_sample(*source);
    CHECK_FALSE(too_soon.gpus[0].gpm.has_value());
    CHECK(fake_depth_query_count("gpm_sample") - samples_before == 4);
    CHECK(too_soon.warnings.empty());

    // Later: paired with the last sample taken (ping-pong), values again.
    wait_gpm_interval();
    const Snapshot later = depth_sample(*source);
    REQUIRE(later.gpus[0].gpm.has_value());
    CHECK(later.gpus[0].gpm->tensor_active_pct == doctest::Approx(62));
    CHECK(fake_depth_query_count("gpm_sample") - samples_before == 6);
}

TEST_CASE("NVLink and PCIe counters come from field values; processes with their GPU memory") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nodes/h100-slurm-step/nvml.json"));
    auto source = make_nvidia_source(fake_roots());
    const Snapshot s = depth_sample(*source);
    REQUIRE(s.gpus.size() == 2);
    REQUIRE(s.gpus[0].interconnect.has_value());
    const GpuInterconnect& l = *s.gpus[0].interconnect;
    CHECK(l.nvlink_link_count == 18u);
    CHECK(l.nvlink_tx_bytes == 9123456789ULL * 1024);  // NVML gives KiB
    CHECK(l.nvlink_rx_bytes == 9023456789ULL * 1024);
    CHECK(l.nvlink_crc_errors == 0u);
    CHECK(l.nvlink_replay_errors == 0u);
    CHECK(l.nvlink_recovery_errors == 0u);
    CHECK(l.pcie_replay_count == 0u);
    CHECK(l.pcie_tx_bytes == 183467239424ULL);
    CHECK(l.pcie_rx_bytes == 301234567168ULL);
    REQUIRE(s.gpus[0].processes.has_value());
    const auto& p = *s.gpus[0].processes;
    REQUIRE(p.size() == 2);
    CHECK(p[0].pid == 31337);
    CHECK(p[0].used_memory_bytes == 64424509440ULL);
    CHECK_FALSE(p[0].gpu_instance_id.has_value());
    CHECK(p[1].pid == 40001);
    CHECK(p[1].owner.empty());  // placing it is the cgroup source's job
    REQUIRE(s.gpus[1].processes.has_value());
    CHECK(s.gpus[1].processes->size() == 1);
}

TEST_CASE("A100: GPM absent with one warning, NVLink errors as counters, PCIe bytes null with a warning") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/a100-no-gpm.json"));
    auto source = make_nvidia_source(fake_roots());
    const Snapshot s = depth_sample(*source);
    REQUIRE(s.gpus.size() == 2);
    CHECK_FALSE(s.gpus[0].gpm.has_value());
    CHECK_FALSE(s.gpus[1].gpm.has_value());
    CHECK(count_containing(s.warnings, "GPM unsupported on GPU 0, GPU 1 (needs a Hopper") == 1);
    REQUIRE(s.gpus[0].interconnect.has_value());
    CHECK(s.gpus[0].interconnect->nvlink_link_count == 12u);
    CHECK(s.gpus[0].interconnect->nvlink_crc_errors == 3u);
    CHECK(s.gpus[0].interconnect->nvlink_replay_errors == 1u);
    CHECK(s.gpus[0].interconnect->pcie_replay_count == 2u);
    CHECK_FALSE(s.gpus[0].interconnect->pcie_tx_bytes.has_value());
    CHECK(count_containing(s.warnings, "GPU 0: field values 197,198 unavailable") == 1);
    CHECK(s.warnings.size() == 3);
    CHECK(depth_sample(*source).warnings.empty());  // once per run
}

TEST_CASE("NVLink CRC errors between two samples are a delta in the GPU's rates") {
    gpu_test::TempDir dir;
    const std::string path = dir / "nvml.json";
    std::filesystem::copy_file(fixture("nvml/a100-no-gpm.json"), path);
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", path);
    auto source = make_nvidia_source(fake_roots());
    Snapshot first = depth_sample(*source);
    first.time = 100;
    std::string text = gpu_test::read_file(path);
    const auto at = text.find("\"45\": 3");
    REQUIRE(at != std::string::npos);
    text.replace(at, 7, "\"45\": 10");
    gpu_test::write_file(path, text);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a distinct mtime for the fake's reload
    Snapshot second = depth_sample(*source);
    second.time = 110;
    REQUIRE(second.gpus[0].interconnect->nvlink_crc_errors == 10u);
    const Rates rates = compute_rates(first, second);
    const CounterDelta* crc = rates.find(rates.gpus, gpu_key(second.gpus[0]), "nvlink_crc_errors");
    REQUIRE(crc != nullptr);
    CHECK(crc->delta == 7u);
    const CounterDelta* replay = rates.find(rates.gpus, gpu_key(second.gpus[0]), "nvlink_replay_errors");
    REQUIRE(replay != nullptr);
    CHECK(replay->delta == 0u);
}

TEST_CASE("MIG: the step's slice from CUDA_VISIBLE_DEVICES, parent gauges said so, GPM per instance") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/h100-mig.json"));
    auto source = make_nvidia_source(fake_roots());
    const Snapshot s = depth_sample(*source, {"MIG-5d1e8c3a-7f29-5b40-9e61-2a8c4d0f7b13"});
    CHECK(s.warnings.empty());
    REQUIRE(s.gpus.size() == 1);
    const Gpu& g = s.gpus[0];
    CHECK(g.uuid == "MIG-5d1e8c3a-7f29-5b40-9e61-2a8c4d0f7b13");
    CHECK(g.index == 0);
    CHECK_FALSE(g.utilization_pct.has_value());  // NVML has none on MIG: unknown, not idle
    CHECK(g.memory_used_bytes == 30064771072ULL);
    CHECK(g.memory_total_bytes == 42949672960ULL);
    CHECK(g.power_w == doctest::Approx(402.3));  // the parent's
    CHECK(g.temperature_c == doctest::Approx(58));
    REQUIRE(g.mig.has_value());
    CHECK(g.mig->parent_uuid == "GPU-c2f81e7a-6d3b-4f09-b8a5-3e1d7c6f0a92");
    CHECK(g.mig->gpu_instance_id == 1);
    CHECK(g.mig->compute_instance_id == 0);
    CHECK(g.mig->gauges_from_parent);
    REQUIRE(g.gpm.has_value());
    CHECK(g.gpm->sm_active_pct == doctest::Approx(79.5));
    CHECK_FALSE(g.interconnect.has_value());
    REQUIRE(g.processes.has_value());
    REQUIRE(g.processes->size() == 1);
    CHECK((*g.processes)[0].gpu_instance_id == 1);
}

TEST_CASE("MIG: every instance without a step, and the pre-470 MIG-GPU-<uuid>/<gi>/<ci> name") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/h100-mig.json"));
    auto all = make_nvidia_source(fake_roots());
    const Snapshot s = depth_sample(*all);
    REQUIRE(s.gpus.size() == 2);
    CHECK(s.gpus[1].uuid == "MIG-9a0b2e6f-3c18-5d74-8f25-6b9e1a4c7d80");
    REQUIRE(s.gpus[1].gpm.has_value());
    CHECK(s.gpus[1].gpm->sm_active_pct == doctest::Approx(0));  // measured idle: 0, not null
    auto old_name = make_nvidia_source(fake_roots());
    const Snapshot o = depth_sample(*old_name, {"MIG-GPU-c2f81e7a-6d3b-4f09-b8a5-3e1d7c6f0a92/2/0"});
    REQUIRE(o.gpus.size() == 1);
    CHECK(o.gpus[0].mig->gpu_instance_id == 2);
}

TEST_CASE("every depth field round-trips through snapshot JSON; absent stays absent") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nodes/h100-slurm-step/nvml.json"));
    auto source = make_nvidia_source(fake_roots());
    Snapshot s = depth_sample(*source);
    REQUIRE(s.gpus.size() == 2);
    (*s.gpus[0].processes)[1].owner = "other_job";
    (*s.gpus[0].processes)[1].uid = 1001;
    (*s.gpus[0].processes)[1].job_id = "4243";
    Gpu mig = s.gpus[1];
    mig.mig = MigInstance{"GPU-x", "00000000:18:00.0", 0, 1, 0, true};
    mig.gpm->dram_bandwidth_pct.reset();
    s.gpus.push_back(mig);
    Gpu bare;
    bare.index = 5;
    s.gpus.push_back(bare);
    JobCgroup cg;
    cg.path = "/system.slice/slurmstepd.scope/job_1";
    cg.job_id = "1";
    cg.memory_current_bytes = 42;
    cg.cpu_throttled_usec = 7;
    cg.psi.cpu_some_avg10 = 1.5;
    s.job_cgroup = cg;

    const Json written = to_json(s);
    std::vector<std::string> problems;
    const Snapshot back = snapshot_from_json(written, problems);
    CHECK(problems.empty());
    CHECK(to_json(back).dump() == written.dump());
    CHECK(written["gpus"][0]["gpm"]["sm_active_pct"] == 88.5);
    CHECK(written["gpus"][2]["gpm"]["dram_bandwidth_pct"].is_null());
    CHECK(written["gpus"][2]["mig"]["gpu_instance_id"] == 1);
    CHECK(written["gpus"][0]["processes"][1]["owner"] == "other_job");
    CHECK_FALSE(written["gpus"][3].contains("gpm"));
    CHECK_FALSE(written["gpus"][3].contains("processes"));
    CHECK_FALSE(back.gpus[3].gpm.has_value());
    CHECK(written["job_cgroup"]["memory_current_bytes"] == 42);
    CHECK(written["job_cgroup"]["memory_peak_bytes"].is_null());
    CHECK(back.job_cgroup->psi.cpu_some_avg10 == doctest::Approx(1.5));

    Snapshot none;
    CHECK_FALSE(to_json(none).contains("job_cgroup"));
}

TEST_CASE("depth keys of the wrong type are problems, not exceptions, and leave the field absent") {
    const Json bad = Json::parse(R"({"gpus":[{"index":0,"gpm":[1],"processes":{"pid":1},"mig":"x"}],
                                    "job_cgroup":{"memory_current_bytes":"lots"}})");
    std::vector<std::string> problems;
    const Snapshot s = snapshot_from_json(bad, problems);
    REQUIRE(s.gpus.size() == 1);
    CHECK_FALSE(s.gpus[0].gpm.has_value());
    CHECK_FALSE(s.gpus[0].processes.has_value());
    CHECK_FALSE(s.gpus[0].mig.has_value());
    REQUIRE(s.job_cgroup.has_value());
    CHECK_FALSE(s.job_cgroup->memory_current_bytes.has_value());
    CHECK(problems.size() == 4);
}
