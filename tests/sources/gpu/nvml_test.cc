// The NVIDIA source through the real dlopen path, against the fake libnvidia-ml.so.1 (tests/fake_nvml).
#include <dlfcn.h>

#include <doctest/doctest.h>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "gpu_test_util.h"
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/model/snapshot_json_text.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/nvml/clocks_event_reasons.h"
#include "libstallscope/sources/nvml/nvml_collector.h"

using namespace stallscope;
using gpu_test::any_contains;
using gpu_test::count_containing;
using gpu_test::fixture;
using gpu_test::ScopedEnv;

namespace {

Roots fake_nvml_roots(const std::string& library = STALLSCOPE_FAKE_NVML_PATH) {
    Roots roots;
    roots.nvml_library = library;
    roots.nvidia_smi = "/nonexistent/nvidia-smi";
    return roots;
}

Snapshot sample(Source& source) {
    Snapshot snapshot;
    source.sample(snapshot);
    return snapshot;
}

// The fake's test hook: how many times a query reached a device (library must be loaded).
unsigned long long fake_query_count(const char* query) {
    void* handle = ::dlopen(STALLSCOPE_FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(handle != nullptr);
    auto fn = reinterpret_cast<unsigned long long (*)(const char*)>(
        ::dlsym(handle, "stallscope_fake_nvml_query_count"));
    REQUIRE(static_cast<bool>(fn));
    const auto count = fn(query);
    ::dlclose(handle);
    return count;
}

}  // namespace

TEST_CASE("NVML's PCIe link generation and width reach the GPU; a GPU it says nothing about gets no link") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/pcie-degraded.json"));
    auto source = make_nvidia_source(fake_nvml_roots());
    const Snapshot snap = sample(*source);
    CHECK_FALSE(any_contains(snap.warnings, "pcie_link"));  // (no GPM, no field values: warned, elsewhere)
    REQUIRE(snap.gpus.size() == 2);
    REQUIRE(snap.gpus[0].pcie_link.has_value());
    CHECK(snap.gpus[0].pcie_link->generation == 5u);
    CHECK(snap.gpus[0].pcie_link->width == 8u);
    CHECK(snap.gpus[0].pcie_link->max_generation == 5u);
    CHECK(snap.gpus[0].pcie_link->max_width == 16u);
    REQUIRE(snap.gpus[1].pcie_link.has_value());
    CHECK(snap.gpus[1].pcie_link->generation == 1u);
    CHECK(snap.gpus[1].pcie_link->max_generation == 5u);
    // Written and read back through the model's one description: the tree, the text and the reader agree.
    std::string text_line;
    REQUIRE(append_snapshot_json(text_line, snap));
    CHECK(text_line == to_json(snap).dump());
    CHECK(text_line.find(R"("pcie_link":{"generation":5,"width":8,"max_generation":5,"max_width":16})") !=
          std::string::npos);
    std::vector<std::string> problems;
    CHECK(snapshot_from_json(to_json(snap), problems) == snap);
    CHECK(problems.empty());

    // A driver that does not report the link: no part, one warning naming it, not a healthy x16.
    gpu_test::TempDir dir;
    std::string text = gpu_test::read_file(fixture("nvml/pcie-degraded.json"));
    for (std::size_t at = 0; (at = text.find(R"("energy_mj")", at)) != std::string::npos; at += 40)
        text.insert(at, R"("not_supported": ["pcie_link"], )");
    std::ofstream(dir / "nvml.json") << text;
    ScopedEnv env2("STALLSCOPE_FAKE_NVML_FIXTURE", dir / "nvml.json");
    auto source2 = make_nvidia_source(fake_nvml_roots());
    const Snapshot bare = sample(*source2);
    REQUIRE(bare.gpus.size() == 2);
    CHECK_FALSE(bare.gpus[0].pcie_link.has_value());
    CHECK(any_contains(bare.warnings, "pcie_link unavailable"));
}

TEST_CASE("NVML through dlopen reports the DGX H100 fixture's 8 GPUs with exact values and units") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nodes/dgx-h100/nvml.json"));
    auto source = make_nvidia_source(fake_nvml_roots());
    CHECK(source->name() == "nvml");
    const Snapshot snap = sample(*source);

    CHECK(snap.warnings.empty());
    REQUIRE(snap.gpus.size() == 8);
    const Gpu& g0 = snap.gpus[0];
    CHECK(g0.index == 0);
    CHECK(g0.vendor == "nvidia");
    CHECK(g0.name == "NVIDIA H100 80GB HBM3");
    CHECK(g0.uuid == "GPU-5f2c9a1e-7b3d-4e8a-9c61-0d2e4f6a8b13");
    CHECK(g0.pci_bus_id == "00000000:18:00.0");
    CHECK(g0.minor_number == 0);
    CHECK(g0.utilization_pct == doctest::Approx(95));
    CHECK(g0.memory_used_bytes == 64424509440ULL);   // 60 GiB
    CHECK(g0.memory_total_bytes == 85520809984ULL);  // 81559 MiB
    CHECK(g0.temperature_c == doctest::Approx(46));
    CHECK(g0.power_w == doctest::Approx(612.345));  // 612345 mW
    CHECK(g0.power_limit_w == doctest::Approx(700.0));
    CHECK(g0.sm_clock_mhz == 1980u);
    CHECK(g0.max_sm_clock_mhz == 1980u);
    CHECK(g0.throttle_reasons_mask == 0u);
    CHECK(g0.throttle_reasons.empty());
    CHECK(g0.violation_power_ns == 0u);
    CHECK(g0.violation_thermal_ns == 0u);
    CHECK(g0.ecc_uncorrected == 0u);
    CHECK(g0.ecc_corrected == 0u);
    CHECK(g0.remapped_rows_pending == 0u);
    CHECK(g0.remapped_rows_failure == 0u);
    CHECK(g0.energy_mj == 48213377012ULL);
    CHECK(g0.xid.empty());

    const char* buses[] = {"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"};
    for (int i = 0; i < 8; ++i) {
        CAPTURE(i);
        CHECK(snap.gpus[i].index == i);
        CHECK(snap.gpus[i].minor_number == i);
        CHECK(snap.gpus[i].pci_bus_id == std::string("00000000:") + buses[i] + ":00.0");
    }
    CHECK(snap.gpus[2].ecc_corrected == 3u);
    CHECK(snap.gpus[6].power_w == doctest::Approx(641.25));
    CHECK(snap.gpus[7].uuid == "GPU-d46f1a28-3b8e-4c0d-9f75-e1a6b2c8d7f4");
}

TEST_CASE("GPUs answering NO_PERMISSION (other jobs' GPUs under ConstrainDevices) are skipped silently") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/constrained-2-of-4.json"));
    auto source = make_nvidia_source(fake_nvml_roots());
    const Snapshot snap = sample(*source);
    // This fixture predates GPM and field values: those say so once (GPUs 2 and 3 only); nothing about 0, 1.
    CHECK(count_containing(snap.warnings, "GPM unsupported on GPU 2, GPU 3 (") == 1);
    CHECK(count_containing(snap.warnings, "interconnect (NVLink/PCIe field values) unavailable") == 2);
    CHECK(snap.warnings.size() == 3);
    CHECK_FALSE(any_contains(snap.warnings, "GPU 0"));
    CHECK_FALSE(any_contains(snap.warnings, "GPU 1"));
    REQUIRE(snap.gpus.size() == 2);
    CHECK(snap.gpus[0].index == 2);
    CHECK(snap.gpus[0].pci_bus_id == "00000000:3A:00.0");
    CHECK(snap.gpus[1].index == 3);
    CHECK(snap.gpus[1].uuid == "GPU-c9046e1f-8a2d-4b73-95e0-2f1c6d8b3a57");
}

TEST_CASE(
    "NOT_SUPPORTED fields are null with one warning per GPU and field per run, and are not asked again") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/not-supported.json"));
    auto source = make_nvidia_source(fake_nvml_roots());
    const Snapshot first = sample(*source);
    REQUIRE(first.gpus.size() == 2);
    const Gpu& g0 = first.gpus[0];
    CHECK_FALSE(g0.power_w.has_value());
    CHECK_FALSE(g0.remapped_rows_pending.has_value());
    CHECK_FALSE(g0.remapped_rows_failure.has_value());
    CHECK_FALSE(g0.violation_thermal_ns.has_value());
    CHECK(g0.violation_power_ns == 0u);  // the other policy still works
    CHECK(g0.power_limit_w == doctest::Approx(700.0));
    const Gpu& g1 = first.gpus[1];
    CHECK_FALSE(g1.ecc_uncorrected.has_value());
    CHECK_FALSE(g1.ecc_corrected.has_value());
    CHECK_FALSE(g1.energy_mj.has_value());
    CHECK_FALSE(g1.temperature_c.has_value());  // NVML_ERROR_UNKNOWN: null, warned, retried
    CHECK(g1.power_w.has_value());

    CHECK(count_containing(first.warnings, "GPU 0 (00000000:18:00.0): power_w unavailable (Not Supported)") ==
          1);
    CHECK(count_containing(first.warnings, "GPU 0 (00000000:18:00.0): remapped_rows_pending unavailable") ==
          1);
    CHECK(count_containing(first.warnings, "GPU 0 (00000000:18:00.0): violation_thermal_ns unavailable") ==
          1);
    CHECK(count_containing(first.warnings, "GPU 1 (00000000:2A:00.0): ecc_uncorrected unavailable") == 1);
    CHECK(count_containing(first.warnings, "GPU 1 (00000000:2A:00.0): energy_mj unavailable") == 1);
    CHECK(count_containing(first.warnings,
                           "GPU 1 (00000000:2A:00.0): temperature_c unavailable (Unknown Error)") == 1);
    // the six above + GPU 1 ecc_corrected + GPM unsupported (one line) + no field values on either GPU
    CHECK(count_containing(first.warnings, "GPM unsupported on GPU 0, GPU 1 (") == 1);
    CHECK(count_containing(first.warnings, "interconnect (NVLink/PCIe field values) unavailable") == 2);
    CHECK(first.warnings.size() == 10);

    const auto power_queries = fake_query_count("power_usage");
    const auto temperature_queries = fake_query_count("temperature");
    const Snapshot second = sample(*source);
    CHECK(second.warnings.empty());
    CHECK_FALSE(second.gpus[0].power_w.has_value());
    CHECK_FALSE(second.gpus[1].temperature_c.has_value());
    CHECK(fake_query_count("power_usage") == power_queries + 1);        // GPU 1 only; GPU 0 gave up
    CHECK(fake_query_count("temperature") == temperature_queries + 2);  // transient error: asked again
}

TEST_CASE(
    "A thermally throttled GPU decodes its clocks-event mask and reports violation time, ECC and row remap") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/throttled.json"));
    auto source = make_nvidia_source(fake_nvml_roots());
    const Snapshot snap = sample(*source);
    REQUIRE(snap.gpus.size() == 2);
    const Gpu& hot = snap.gpus[1];
    CHECK(hot.throttle_reasons_mask == 0x64u);
    CHECK(hot.throttle_reasons ==
          std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown", "hw_thermal_slowdown"});
    CHECK(hot.sm_clock_mhz == 1410u);
    CHECK(hot.temperature_c == doctest::Approx(87));
    CHECK(hot.violation_power_ns == 18500000000ULL);
    CHECK(hot.violation_thermal_ns == 42750000000ULL);
    CHECK(hot.ecc_uncorrected == 2u);
    CHECK(hot.remapped_rows_pending == 1u);
    CHECK(hot.remapped_rows_failure == 0u);
    CHECK(snap.gpus[0].throttle_reasons.empty());
}

TEST_CASE("Every clocks-event bit has a name and unknown bits stay visible") {
    CHECK(decode_clocks_event_reasons(0x1FF) ==
          std::vector<std::string>{"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                                   "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
                                   "hw_power_brake_slowdown", "display_clock_setting"});
    CHECK(decode_clocks_event_reasons(0x8 | 0x1000) ==
          std::vector<std::string>{"hw_slowdown", "unknown_0x1000"});
    CHECK(decode_clocks_event_reasons(0).empty());
}

TEST_CASE("Values changed in the fixture between samples show up in the next sample (handles are kept)") {
    gpu_test::TempDir dir;
    const std::string path = dir / "nvml.json";
    std::string text = gpu_test::read_file(fixture("nvml/throttled.json"));
    gpu_test::write_file(path, text);
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", path);
    auto source = make_nvidia_source(fake_nvml_roots());
    const Snapshot before = sample(*source);
    REQUIRE(before.gpus.size() == 2);
    CHECK(before.gpus[1].ecc_uncorrected == 2u);

    const auto at = text.find("\"ecc_volatile_uncorrected\": 2");
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string("\"ecc_volatile_uncorrected\": 2").size(),
                 "\"ecc_volatile_uncorrected\": 5");
    gpu_test::write_file(path, text);
    const Snapshot after = sample(*source);
    REQUIRE(after.gpus.size() == 2);
    CHECK(after.gpus[1].ecc_uncorrected == 5u);
}

TEST_CASE("A lost GPU is named in a warning on every sample, not just once") {
    gpu_test::TempDir dir;
    const std::string path = dir / "nvml.json";
    gpu_test::write_file(path, R"({"gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "pci_bus_id":
        "00000000:18:00.0", "utilization_gpu_pct": 0, "errors": {"utilization": 15, "memory": 15}}]})");
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", path);
    auto source = make_nvidia_source(fake_nvml_roots());
    for (int i = 0; i < 2; ++i) {
        const Snapshot snap = sample(*source);
        REQUIRE(snap.gpus.size() == 1);
        CHECK_FALSE(snap.gpus[0].utilization_pct.has_value());
        CHECK(count_containing(snap.warnings, "GPU 0 (00000000:18:00.0) reports GPU lost") == 1);
    }
}

TEST_CASE("An older driver's library without the newer entry points falls back to _v2 / ThrottleReasons") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/throttled.json"));
    auto source = make_nvidia_source(fake_nvml_roots(STALLSCOPE_FAKE_NVML_OLD_PATH));
    const Snapshot first = sample(*source);
    REQUIRE(first.gpus.size() == 2);
    CHECK(first.gpus[1].pci_bus_id == "00000000:2A:00.0");  // nvmlDeviceGetPciInfo_v2
    CHECK(first.gpus[1].throttle_reasons_mask == 0x64u);    // ...ClocksThrottleReasons
    CHECK_FALSE(first.gpus[1].remapped_rows_pending.has_value());
    CHECK_FALSE(first.gpus[1].energy_mj.has_value());
    CHECK(count_containing(first.warnings, "has no nvmlDeviceGetRemappedRows") == 1);
    CHECK(count_containing(first.warnings, "has no nvmlDeviceGetTotalEnergyConsumption") == 1);
    // No GPM entry points in this driver: GPM absent, said once for both GPUs (not once per symbol).
    CHECK_FALSE(first.gpus[0].gpm.has_value());
    CHECK(count_containing(first.warnings, "GPM unsupported on GPU 0, GPU 1 (") == 1);
    CHECK(count_containing(first.warnings, "interconnect (NVLink/PCIe field values) unavailable") == 2);
    CHECK(first.warnings.size() == 5);
    CHECK(sample(*source).warnings.empty());
}

TEST_CASE("STALLSCOPE_FAKE_NVML_SLEEP_MS makes every device query of the fake hang that long") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nvml/throttled.json"));
    auto source = make_nvidia_source(fake_nvml_roots());
    sample(*source);  // discovery outside the timed part
    ScopedEnv sleep("STALLSCOPE_FAKE_NVML_SLEEP_MS", "10");
    const auto started = std::chrono::steady_clock::now();
    const Snapshot snap = sample(*source);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(snap.gpus.size() == 2);
    CHECK(took >= 2 * 12 * 0.010);  // 2 GPUs x at least 12 queries x 10 ms
}

TEST_CASE("NVML that fails to initialise (no fixture) falls back to nvidia-smi when it is present") {
    ScopedEnv env("STALLSCOPE_FAKE_NVML_FIXTURE", std::nullopt);
    ScopedEnv out("STALLSCOPE_FAKE_NVIDIA_SMI_OUTPUT", fixture("nvidia-smi/dgx-h100-healthy.csv"));
    Roots roots = fake_nvml_roots();
    roots.nvidia_smi = gpu_test::fake_nvidia_smi();
    auto source = make_nvidia_source(roots);
    const Snapshot first = sample(*source);
    REQUIRE(first.gpus.size() == 8);
    CHECK(first.gpus[3].pci_bus_id == "00000000:5D:00.0");
    CHECK(first.gpus[3].memory_used_bytes == 61440ULL * 1024 * 1024);
    REQUIRE(first.warnings.size() == 1);
    CHECK(first.warnings[0].find("nvmlInit_v2 failed: Driver Not Loaded") != std::string::npos);
    CHECK(first.warnings[0].find("instead") != std::string::npos);
    const Snapshot second = sample(*source);
    CHECK(second.gpus.size() == 8);
    CHECK(second.warnings.empty());
}

TEST_CASE(
    "Missing libnvidia-ml falls back to nvidia-smi; with neither there are no GPUs and one warning per "
    "snapshot") {
    Roots roots = fake_nvml_roots("/nonexistent/libnvidia-ml.so.1");
    SUBCASE("nvidia-smi present") {
        ScopedEnv out("STALLSCOPE_FAKE_NVIDIA_SMI_OUTPUT", fixture("nvidia-smi/dgx-h100-healthy.csv"));
        roots.nvidia_smi = gpu_test::fake_nvidia_smi();
        auto source = make_nvidia_source(roots);
        const Snapshot snap = sample(*source);
        CHECK(snap.gpus.size() == 8);
        CHECK(any_contains(snap.warnings, "/nonexistent/libnvidia-ml.so.1"));
    }
    SUBCASE("nvidia-smi absent") {
        auto source = make_nvidia_source(roots);
        for (int i = 0; i < 3; ++i) {
            const Snapshot snap = sample(*source);
            CHECK(snap.gpus.empty());
            REQUIRE(snap.warnings.size() == 1);
            CHECK(snap.warnings[0].find("no NVIDIA GPU telemetry") != std::string::npos);
            CHECK(snap.warnings[0].find("/nonexistent/nvidia-smi: No such file or directory") !=
                  std::string::npos);
            CHECK(snap.warnings[0].find('\n') == std::string::npos);
        }
    }
    SUBCASE("nvidia-smi present but failing (driver not loaded)") {
        ScopedEnv out("STALLSCOPE_FAKE_NVIDIA_SMI_OUTPUT", fixture("nvidia-smi/garbage.csv"));
        ScopedEnv exit_status("STALLSCOPE_FAKE_NVIDIA_SMI_EXIT", "9");
        roots.nvidia_smi = gpu_test::fake_nvidia_smi();
        auto source = make_nvidia_source(roots);
        const Snapshot snap = sample(*source);
        CHECK(snap.gpus.empty());
        REQUIRE(snap.warnings.size() == 1);
        CHECK(snap.warnings[0].find("exit status 9: NVIDIA-SMI has failed") != std::string::npos);
    }
}
