// The nvidia-smi fallback: CSV parser on every fixture, the bounded no-shell runner, the collector.
#include <doctest/doctest.h>
#include <algorithm>
#include <chrono>

#include "gpu_test_util.h"
#include "libstallscope/sources/nvidia_smi/bounded_command.h"
#include "libstallscope/sources/nvidia_smi/smi_collector.h"
#include "libstallscope/sources/nvidia_smi/smi_csv.h"

using namespace stallscope;
using gpu_test::any_contains;
using gpu_test::fixture;
using gpu_test::ScopedEnv;

TEST_CASE("nvidia-smi CSV of a healthy DGX H100 parses to 8 GPUs in snapshot units") {
    const auto parsed = parse_nvidia_smi_csv(gpu_test::read_file(fixture("nvidia-smi/dgx-h100-healthy.csv")));
    CHECK(parsed.warnings.empty());
    REQUIRE(parsed.gpus.size() == 8);
    const Gpu& g = parsed.gpus[0];
    CHECK(g.index == 0);
    CHECK(g.vendor == "nvidia");
    CHECK(g.uuid == "GPU-5f2c9a1e-7b3d-4e8a-9c61-0d2e4f6a8b13");
    CHECK(g.pci_bus_id == "00000000:18:00.0");
    CHECK(g.name == "NVIDIA H100 80GB HBM3");
    CHECK(g.utilization_pct == doctest::Approx(95));
    CHECK(g.memory_used_bytes == 61440ULL * 1048576);  // MiB -> bytes
    CHECK(g.memory_total_bytes == 81559ULL * 1048576);
    CHECK(g.temperature_c == doctest::Approx(46));
    CHECK(g.power_w == doctest::Approx(612.34));
    CHECK(g.power_limit_w == doctest::Approx(700.0));
    CHECK(g.sm_clock_mhz == 1980u);
    CHECK(g.max_sm_clock_mhz == 1980u);
    CHECK(g.throttle_reasons_mask == 0u);
    CHECK(g.throttle_reasons.empty());
    CHECK(g.ecc_uncorrected == 0u);
    CHECK(parsed.gpus[7].pci_bus_id == "00000000:DB:00.0");
    CHECK(parsed.gpus[5].utilization_pct == doctest::Approx(94));
}

TEST_CASE("nvidia-smi [N/A], [Not Supported] and [GPU is lost] cells become null with a warning, never 0") {
    const auto parsed = parse_nvidia_smi_csv(gpu_test::read_file(fixture("nvidia-smi/partial-na.csv")));
    REQUIRE(parsed.gpus.size() == 3);
    const Gpu& throttled = parsed.gpus[0];
    CHECK(throttled.throttle_reasons_mask == 0x64u);
    CHECK(throttled.throttle_reasons ==
          std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown", "hw_thermal_slowdown"});
    CHECK(throttled.sm_clock_mhz == 1755u);

    const Gpu& partial = parsed.gpus[1];
    CHECK_FALSE(partial.utilization_pct.has_value());
    CHECK_FALSE(partial.power_w.has_value());
    CHECK_FALSE(partial.power_limit_w.has_value());
    CHECK_FALSE(partial.ecc_uncorrected.has_value());
    CHECK(partial.memory_used_bytes == 61440ULL * 1048576);
    CHECK(any_contains(parsed.warnings, "GPU 1: power_w '[Not Supported]' -> null"));
    CHECK(any_contains(parsed.warnings, "GPU 1: utilization_pct '[N/A]' -> null"));

    const Gpu& lost = parsed.gpus[2];
    CHECK(lost.uuid == "GPU-3e7b0d92-c4a1-4f58-b2e6-19d8a7c5f046");
    CHECK_FALSE(lost.utilization_pct.has_value());
    CHECK_FALSE(lost.memory_total_bytes.has_value());
    CHECK_FALSE(lost.ecc_uncorrected.has_value());
    CHECK(any_contains(parsed.warnings, "GPU 2: temperature_c '[GPU is lost]' -> null"));
}

TEST_CASE("nvidia-smi garbage output never throws: bad rows are skipped and bad cells are null, each named") {
    const auto parsed = parse_nvidia_smi_csv(gpu_test::read_file(fixture("nvidia-smi/garbage.csv")));
    // Only the row with index 3 has 14 columns and a usable index/uuid.
    REQUIRE(parsed.gpus.size() == 1);
    const Gpu& g = parsed.gpus[0];
    CHECK(g.index == 3);
    CHECK(g.pci_bus_id.empty());
    CHECK_FALSE(g.utilization_pct.has_value());     // -5
    CHECK_FALSE(g.memory_used_bytes.has_value());   // 61440MiB
    CHECK_FALSE(g.memory_total_bytes.has_value());  // > 2^64-1
    CHECK_FALSE(g.temperature_c.has_value());       // hot
    CHECK_FALSE(g.power_w.has_value());             // 612.34W
    CHECK(g.power_limit_w == doctest::Approx(700.0));
    CHECK_FALSE(g.sm_clock_mhz.has_value());  // 1980.5
    CHECK(g.max_sm_clock_mhz == 1980u);
    CHECK_FALSE(g.throttle_reasons_mask.has_value());  // 0xZZ
    CHECK(g.throttle_reasons.empty());
    CHECK_FALSE(g.ecc_uncorrected.has_value());  // -1
    CHECK(any_contains(parsed.warnings, "line 1: expected 14 columns, got 1 ('NVIDIA-SMI has failed"));
    CHECK(any_contains(parsed.warnings, "line 3: expected 14 columns, got 6"));
    CHECK(any_contains(parsed.warnings, "line 4: no usable GPU index/uuid"));
    CHECK(any_contains(parsed.warnings, "line 6: no usable GPU index/uuid"));
    CHECK(any_contains(parsed.warnings, "GPU 3: pci_bus_id 'not-a-bus-id' is not a PCI bus id"));
    CHECK(any_contains(parsed.warnings,
                       "GPU 3: memory_total_bytes '99999999999999999999' is not a valid value"));
    for (const auto& warning : parsed.warnings) {
        CAPTURE(warning);
        for (char c : warning) CHECK((c >= 0x20 && c < 0x7f));  // binary input is not echoed raw
    }
    CHECK(parse_nvidia_smi_csv("").gpus.empty());
    CHECK(parse_nvidia_smi_csv(std::string("\0\0\0", 3)).gpus.empty());
}

TEST_CASE("A bounded command that hangs is killed at its deadline") {
    const auto started = std::chrono::steady_clock::now();
    const auto result = run_bounded_command({"sleep", "10"}, std::chrono::milliseconds(200), 1024);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(result.started);
    CHECK(result.timed_out);
    CHECK_FALSE(result.ok());
    CHECK(took < 3.0);
    CHECK(result.error.find("no answer within 200 ms") != std::string::npos);
}

TEST_CASE("A bounded command reports exec failure, exit status and over-long output") {
    const auto missing = run_bounded_command({"/nonexistent/nvidia-smi"}, std::chrono::seconds(2), 1024);
    CHECK_FALSE(missing.started);
    CHECK(missing.error == "/nonexistent/nvidia-smi: No such file or directory");

    const auto failing = run_bounded_command({"false"}, std::chrono::seconds(2), 1024);
    CHECK(failing.started);
    CHECK(failing.exit_status == 1);
    CHECK_FALSE(failing.ok());

    const auto chatty = run_bounded_command({"yes"}, std::chrono::seconds(5), 64 * 1024);
    CHECK(chatty.truncated);
    CHECK(chatty.output.size() <= 64 * 1024);

    const auto echo = run_bounded_command({"echo", "a;b", "$HOME"}, std::chrono::seconds(2), 1024);
    CHECK(echo.ok());
    CHECK(echo.output == "a;b $HOME\n");  // no shell: nothing expanded
}

TEST_CASE("nvidia-smi from a driver older than 535 is re-asked with clocks_throttle_reasons.active") {
    gpu_test::TempDir dir;
    ScopedEnv out("STALLSCOPE_FAKE_NVIDIA_SMI_OUTPUT", fixture("nvidia-smi/dgx-h100-healthy.csv"));
    ScopedEnv legacy("STALLSCOPE_FAKE_NVIDIA_SMI_LEGACY", "1");
    ScopedEnv args("STALLSCOPE_FAKE_NVIDIA_SMI_ARGS", dir / "args");
    NvidiaSmiCollector collector(gpu_test::fake_nvidia_smi());
    std::string why;
    REQUIRE(collector.probe(why));
    Snapshot snap;
    collector.sample(snap);
    CHECK(snap.gpus.size() == 8);
    collector.sample(snap);
    CHECK(snap.gpus.size() == 16);
    const std::string calls = gpu_test::read_file(dir / "args");
    // probe (new name, rejected), probe again (old name), second sample (old name). The first sample
    // reuses the probe's output.
    CHECK(calls.find("clocks_event_reasons.active") < calls.find("clocks_throttle_reasons.active"));
    CHECK(std::count(calls.begin(), calls.end(), '\n') == 3);
    CHECK(calls.find("--format=csv,noheader,nounits") != std::string::npos);
}

TEST_CASE("A hanging nvidia-smi is given up on after the timeout") {
    ScopedEnv out("STALLSCOPE_FAKE_NVIDIA_SMI_OUTPUT", fixture("nvidia-smi/dgx-h100-healthy.csv"));
    ScopedEnv sleep("STALLSCOPE_FAKE_NVIDIA_SMI_SLEEP", "5");
    NvidiaSmiCollector collector(gpu_test::fake_nvidia_smi(), std::chrono::milliseconds(300));
    std::string why;
    CHECK_FALSE(collector.probe(why));
    CHECK(why.find("no answer within 300 ms") != std::string::npos);
}
