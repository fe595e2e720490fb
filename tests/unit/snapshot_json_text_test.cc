// append_*_json (snapshot_json_text.h): the --json line written from the structs is byte for byte the
// dump() of the tree to_json builds, on every fixture node, every scenario sample and the awkward values.
#include "libstallscope/model/snapshot_json_text.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/sampler.h"
#include "tests/unit/snapshot_fixture.h"

namespace {

using namespace stallscope;
namespace fs = std::filesystem;

// The line as the CLI built it before the writer existed (helper/cli_sample.cc at f95a400).
Json line_as_before(const SampleLine& l) {
    Json out = to_json(l.snapshot);
    if (l.rates) out["rates"] = to_json(*l.rates);
    out["profile"] = to_json(l.profile);
    for (const auto& w : l.more_warnings) out["warnings"].push_back(w);
    if (l.more_context)
        for (const auto& [k, v] : l.more_context->items()) out["context"][k] = v;
    return out;
}

// Where two texts first differ, with some context: a ~50 KB line is no use in a failure message.
std::string first_difference(const std::string& a, const std::string& b) {
    const auto at = static_cast<std::size_t>(
        std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin()).first - a.begin());
    if (at == a.size() && at == b.size()) return "";
    const std::size_t from = at < 80 ? 0 : at - 80;
    return "at " + std::to_string(at) + ": ..." + a.substr(from, 160) + "\n  vs ..." + b.substr(from, 160);
}

// The writer's text equals the tree's dump(), or the writer declined and dump() throws (ill-formed UTF-8).
// Returns whether the writer wrote it.
bool check_line(const SampleLine& line) {
    std::string text = "kept ";  // appended to, never replaced
    if (!append_sample_line_json(text, line)) {
        CHECK_THROWS(sample_line_to_json(line).dump());  // ill-formed UTF-8 only
        return false;
    }
    const std::string expected = sample_line_to_json(line).dump();
    CHECK(first_difference(expected, line_as_before(line).dump()) == "");
    CHECK(text.substr(0, 5) == "kept ");
    CHECK(first_difference(text.substr(5), expected) == "");
    return true;
}

// Runs the samples through a Profiler (rates from the second on) and checks every line.
std::size_t check_run(std::vector<Snapshot> samples) {
    Profiler profiler;
    std::size_t written = 0;
    for (auto& s : samples) {
        const Profile profile = profiler.observe(std::move(s));
        written += check_line({*profiler.last_sample(), profiler.last_rates(), profile}) ? 1 : 0;
    }
    return written;
}

Snapshot sample_node(const fs::path& node) {
    Roots roots;
    roots.procfs = (node / "proc").string();
    roots.sysfs = (node / "sys").string();
    roots.ethtool = (node / "ethtool").string();
    roots.dev = "/nonexistent";
    roots.nvidia_smi = "/nonexistent/nvidia-smi";
    roots.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    if (fs::exists(node / "nvml.json")) {
        roots.nvml_library = FAKE_NVML_PATH;
        ::setenv("STALLSCOPE_FAKE_NVML_FIXTURE", (node / "nvml.json").c_str(), 1);
    }
    Sampler sampler = Sampler::for_node(roots);
    return sampler.sample_at(1'790'000'000.25);
}

// A GPU with every depth field set to a distinct value: a counter past 2^63, fractions, both MIG ids,
// a process with every field and one with strings that need escapes (and multi-byte UTF-8).
Gpu gpu_with_depth() {
    Gpu g = test::full_snapshot().gpus.at(0);
    g.gpm = GpmMetrics{91.5, 0.1 + 0.2, 44.0, 2.0, 1e-300, 5e20, 46000.125, 0.0};
    g.interconnect = GpuInterconnect{
        18, std::numeric_limits<std::uint64_t>::max(), 8023456789, 0, 1, 2, 3, 173467239424, 291234567168};
    g.mig = MigInstance{"GPU-parent", "00000000:18:00.0", 7, 1, 0, false};
    GpuProcess full;
    full.pid = 3490012;
    full.used_memory_bytes = 64424509440;
    full.gpu_instance_id = 1;
    full.compute_instance_id = 0;
    full.cgroup = "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0";
    full.job_id = "42";
    full.uid = std::numeric_limits<std::uint32_t>::max();
    full.owner = "step";
    GpuProcess escaped = full;
    escaped.pid = std::numeric_limits<std::int64_t>::min();
    escaped.cgroup = "/a \"quoted\"\\path\n\t\x01\x1f/caf\xc3\xa9 \xe2\x80\x94";
    escaped.job_id = "</script>";
    escaped.owner = "other_user";
    g.processes = std::vector<GpuProcess>{full, escaped};
    return g;
}

// The snapshot alone and as a sample line (with a profile, rates of the same sample), each against dump().
void check_snapshot(const Snapshot& s) {
    std::string text;
    REQUIRE(append_snapshot_json(text, s));
    CHECK(first_difference(text, to_json(s).dump()) == "");
    const Rates rates = compute_rates(s, s);
    Profile p;
    CHECK(check_line({s, &rates, p}));
}

}  // namespace

TEST_CASE("the --json line written from the structs is the tree's dump() on every fixture node") {
    std::size_t nodes = 0, gpus = 0, depth_gpus = 0, resets = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(STALLSCOPE_FIXTURES_DIR) / "nodes")) {
        if (!entry.is_directory()) continue;
        CAPTURE(entry.path().string());
        // Two samples of the node, so the second line has rates: the same counters (rates 0) but the first
        // port's and interface's, which went down (a reset: the {"per_second", "delta", ...} form).
        std::vector<Snapshot> run = {sample_node(entry.path()), sample_node(entry.path())};
        run[1].time += 1;
        if (!run[1].rdma.empty())
            for (auto& [name, v] : run[1].rdma[0].counters)
                if (v && *v > 0) *v -= 1;
        if (!run[1].interfaces.empty()) run[1].interfaces[0].rx_bytes = 0;
        resets += to_json(compute_rates(run[0], run[1])).dump().find("\"reset\":true") != std::string::npos;
        gpus += run[0].gpus.size();
        depth_gpus += std::count_if(run[0].gpus.begin(), run[0].gpus.end(),
                                    [](const Gpu& g) { return g.gpm && g.interconnect && g.processes; });
        CHECK(check_run(std::move(run)) == 2);
        ++nodes;
    }
    ::unsetenv("STALLSCOPE_FAKE_NVML_FIXTURE");
    CHECK(nodes >= 6);
    CHECK(gpus >= 8);        // the fake NVML answered: GPU objects (and their depth keys) are compared too
    CHECK(depth_gpus >= 8);  // dgx-h100: gpm, interconnect and processes on every GPU
    CHECK(resets >= 6);
}

TEST_CASE("the --json line written from the structs is the tree's dump() on every scenario sample") {
    std::size_t files = 0, lines = 0, with_gpus = 0, with_depth = 0, with_cgroup = 0;
    for (const char* dir : {"scenarios", "scenarios_gpu"}) {
        for (const auto& entry : fs::directory_iterator(fs::path(STALLSCOPE_TESTS_DIR) / dir)) {
            if (entry.path().extension() != ".jsonl") continue;
            CAPTURE(entry.path().string());
            std::ifstream in(entry.path());
            std::vector<Snapshot> run;
            for (std::string text; std::getline(in, text);) {
                std::vector<std::string> problems;
                const Json j = Json::parse(text, nullptr, false);
                if (!j.is_object()) continue;
                run.push_back(snapshot_from_json(j, problems));
                with_gpus += run.back().gpus.empty() ? 0 : 1;
                with_cgroup += run.back().job_cgroup ? 1 : 0;
                with_depth += std::any_of(run.back().gpus.begin(), run.back().gpus.end(),
                                          [](const Gpu& g) { return g.gpm || g.processes || g.mig; });
            }
            Profiler profiler;
            for (auto& s : run) {
                const Profile profile = profiler.observe(std::move(s));
                const Rates* rates = profiler.last_rates();
                CHECK(check_line({*profiler.last_sample(), rates, profile}));
                ++lines;
            }
            ++files;
        }
    }
    CHECK(files >= 40);
    CHECK(lines >= 400);
    CHECK(with_gpus > 0);
    CHECK(with_depth > 0);
    CHECK(with_cgroup > 0);
}

TEST_CASE("the parts written alone are each to_json's dump()") {
    Snapshot a = test::full_snapshot();
    std::string text;
    REQUIRE(append_snapshot_json(text, a));
    CHECK(text == to_json(a).dump());

    Snapshot b = a;
    b.time += 2;
    b.rdma[0].counters["port_rcv_data"] = 50;  // went down: a reset
    b.interfaces[0].rx_bytes = 4'294'967'295ull + 20;
    Rates r = compute_rates(a, b);
    text.clear();
    REQUIRE(append_rates_json(text, r));
    CHECK(text == to_json(r).dump());
    CHECK(text.find("\"reset\":true") != std::string::npos);

    Profile p;
    p.label = kLabelSlow;
    p.confidence = 0.8333333333;
    Reason reason;
    reason.code = "fabric_congestion";
    reason.subject = "mlx5_0/1";
    reason.message = "CNPs \"at\" 12.5/s\ton\\ mlx5_0/1\n";
    reason.evidence = {
        {"cnp_per_s", 12.499999999999998}, {"threshold", 10.0},   {"huge", 1e300}, {"nan", std::nan("")},
        {"port", std::string("mlx5_0/1")}, {"negative", -0.00004}};
    reason.first_seen = 1795160401.9996;
    p.reasons = {reason, reason};
    p.unknown_reason = "no_counters";
    text.clear();
    REQUIRE(append_profile_json(text, p));
    CHECK(text == to_json(p).dump());
}

TEST_CASE("awkward values: escapes, non-finite gauges, extremes, extra warnings and context") {
    Snapshot s = test::full_snapshot();
    s.host = "ctl\x01\x1f\"\\/\b\f\r";
    s.warnings = {"a \"quoted\" warning", ""};
    s.host_stats.load1 = std::numeric_limits<double>::infinity();
    s.host_stats.load5 = std::nan("");
    s.host_stats.load15 = -0.0;
    s.gpus[0].power_w = 1e-300;
    s.gpus[0].temperature_c = 5e20;
    s.gpus[0].index = std::numeric_limits<int>::min();
    s.collector_failures = {{"nvml", "timed out after 5.0 s"}, {"odd\tname", "x"}};
    s.rdma[0].counters["max"] = std::numeric_limits<std::uint64_t>::max();
    Profile p;
    const std::vector<std::string> more = {"sinks: textfile: No space left", "second"};
    Json context = Json::object();
    context["detected_from"] = "another process's environment";
    context["detected_from_pid"] = 4242L;
    CHECK(check_line({s, nullptr, p, more, &context}));
    CHECK(check_line({s, nullptr, p, {}, nullptr}));
    const Json empty_context = Json::object();
    CHECK(check_line({s, nullptr, p, more, &empty_context}));
}

TEST_CASE("UTF-8 text is written as dump() writes it; ill-formed UTF-8 is declined, as dump() throws") {
    Snapshot s = test::full_snapshot();
    Profile p;
    p.label = kLabelSlow;
    Reason reason;
    reason.code = "job_cgroup_io_pressure";
    reason.message = "all its tasks stalled on I/O \xe2\x80\x94 input or checkpoint I/O";  // an em dash
    p.reasons = {reason};
    s.warnings = {"caf\xc3\xa9"};
    CHECK(check_line({s, nullptr, p}));

    std::string text;
    s.rdma[0].hw_counters["\xff"] = 1;
    CHECK_FALSE(append_snapshot_json(text, s));
    CHECK_THROWS(to_json(s).dump());
    s.rdma[0].hw_counters.erase("\xff");
    s.warnings = {"cut \xe2\x80"};  // a sequence cut short
    text.clear();
    CHECK_FALSE(append_sample_line_json(text, {s, nullptr, p}));
    s.warnings.clear();
    text.clear();
    CHECK(append_snapshot_json(text, s));
}

TEST_CASE("a GPU's depth objects written from the structs are gpu_to_json's dump()") {
    Snapshot s = test::full_snapshot();
    const Gpu full = gpu_with_depth();

    SUBCASE("every field set, and each of the 16 choices of which objects are there") {
        s.gpus.clear();
        for (int present = 0; present < 16; ++present) {
            Gpu g = full;
            g.index = present;
            if (!(present & 1)) g.gpm.reset();
            if (!(present & 2)) g.interconnect.reset();
            if (!(present & 4)) g.mig.reset();
            if (!(present & 8)) g.processes.reset();
            s.gpus.push_back(g);
        }
        check_snapshot(s);
        // The tree is the reference, but pin a few bytes too, so both cannot drift together.
        const std::string text = to_json(s).dump();
        CHECK(text.find("\"gpm\":{\"sm_active_pct\":91.5,\"sm_occupancy_pct\":0.30000000000000004,") !=
              std::string::npos);
        CHECK(text.find("\"nvlink_tx_bytes\":18446744073709551615,") != std::string::npos);
        CHECK(text.find("\"mig\":{\"parent_uuid\":\"GPU-parent\",\"parent_pci_bus_id\":\"00000000:18:00.0\","
                        "\"parent_index\":7,\"gpu_instance_id\":1,\"compute_instance_id\":0,"
                        "\"gauges_from_parent\":false}") != std::string::npos);
        CHECK(text.find("\"uid\":4294967295,\"owner\":\"step\"}") != std::string::npos);
        CHECK(text.find("\"xid\":[79]}") != std::string::npos);  // present == 0: no depth key at all
    }

    SUBCASE("null counters and gauges, MIG without instance ids, processes with unknown fields") {
        Gpu nulls = full;
        nulls.gpm = GpmMetrics{};
        nulls.interconnect = GpuInterconnect{};
        nulls.mig = MigInstance{};  // no ids, parent_index -1, gauges_from_parent true
        GpuProcess unknown;         // pid 0, nothing else known
        unknown.owner = "unknown";
        GpuProcess blank;  // every string empty
        nulls.processes = std::vector<GpuProcess>{unknown, blank};
        Gpu empty = full;
        empty.processes = std::vector<GpuProcess>{};  // asked, none running: [] and not absent
        empty.mig->gpu_instance_id = 3;               // one id without the other
        empty.mig->compute_instance_id.reset();
        s.gpus = {nulls, empty};
        check_snapshot(s);
        const std::string text = to_json(s).dump();
        CHECK(
            text.find("\"mig\":{\"parent_uuid\":\"\",\"parent_pci_bus_id\":\"\",\"parent_index\":-1,"
                      "\"gpu_instance_id\":null,\"compute_instance_id\":null,\"gauges_from_parent\":true}") !=
            std::string::npos);
        CHECK(text.find("{\"pid\":0,\"used_memory_bytes\":null,\"gpu_instance_id\":null,"
                        "\"compute_instance_id\":null,\"cgroup\":\"\",\"job_id\":\"\",\"uid\":null,"
                        "\"owner\":\"unknown\"}") != std::string::npos);
        CHECK(text.find("\"processes\":[]") != std::string::npos);
    }

    SUBCASE("non-finite and extreme gauges: null, as dump() writes them") {
        Gpu odd = full;
        odd.gpm->sm_active_pct = std::nan("");
        odd.gpm->sm_occupancy_pct = std::numeric_limits<double>::infinity();
        odd.gpm->tensor_active_pct = -std::numeric_limits<double>::infinity();
        odd.gpm->dram_bandwidth_pct = -0.0;
        odd.gpm->pcie_tx_mib_per_s = std::numeric_limits<double>::max();
        odd.gpm->pcie_rx_mib_per_s = std::numeric_limits<double>::denorm_min();
        odd.mig->parent_index = std::numeric_limits<int>::min();
        odd.mig->gpu_instance_id = std::numeric_limits<int>::max();
        s.gpus = {odd};
        check_snapshot(s);
        CHECK(to_json(s).dump().find("{\"sm_active_pct\":null,\"sm_occupancy_pct\":null,"
                                     "\"tensor_active_pct\":null,\"dram_bandwidth_pct\":-0.0,") !=
              std::string::npos);
    }

    SUBCASE("ill-formed UTF-8 in a process's strings is declined, as dump() throws") {
        Gpu bad = full;
        bad.processes->back().owner = "cut \xe2\x80";
        s.gpus = {bad};
        std::string text;
        CHECK_FALSE(append_snapshot_json(text, s));
        CHECK_THROWS(to_json(s).dump());
        bad.processes->back().owner = "ok";
        bad.mig->parent_uuid = "\xff";
        s.gpus = {bad};
        text.clear();
        CHECK_FALSE(append_snapshot_json(text, s));
    }
}

TEST_CASE("the job cgroup written from the structs is job_cgroup_to_json's dump()") {
    Snapshot s = test::full_snapshot();
    JobCgroup c;
    c.version = 2;
    c.path = "/system.slice/slurmstepd.scope/job_42/step_0";
    c.scope = "step";
    c.job_id = "42";
    c.step_id = "0";
    c.memory_current_bytes = 1;
    c.memory_peak_bytes = 2;
    c.memory_max_bytes = std::numeric_limits<std::uint64_t>::max();
    c.memory_oom_events = 3;
    c.memory_oom_kill_events = 4;
    c.cpu_usage_usec = 5;
    c.cpu_user_usec = 6;
    c.cpu_system_usec = 7;
    c.cpu_nr_periods = 8;
    c.cpu_nr_throttled = 9;
    c.cpu_throttled_usec = 10;
    c.psi = {1.5, 0.1 + 0.2, 3.0, 4.25, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11, 12, 13, 14, 15};

    SUBCASE("every field set") {
        s.job_cgroup = c;
        check_snapshot(s);
        const std::string text = to_json(s).dump();
        CHECK(text.find(
                  "\"job_cgroup\":{\"version\":2,\"path\":\"/system.slice/slurmstepd.scope/job_42/step_0\","
                  "\"scope\":\"step\",\"job_id\":\"42\",\"step_id\":\"0\",\"memory_current_bytes\":1,") !=
              std::string::npos);
        CHECK(text.find("\"cpu_throttled_usec\":10,\"psi\":{\"cpu_some_avg10\":1.5,"
                        "\"cpu_some_avg60\":0.30000000000000004,") != std::string::npos);
        CHECK(text.find("\"memory_full_total_us\":15}},\"collector_failures\"") != std::string::npos);
    }
    SUBCASE("cgroup v1: no pressure, no cpu controller, memory.max unlimited; escaped strings") {
        JobCgroup v1;
        v1.version = 1;
        v1.path = "/slurm/uid_1000/job_\"7\"\\step\t\x01";
        v1.scope = "job";
        v1.job_id = "caf\xc3\xa9";
        v1.memory_current_bytes = 0;
        s.job_cgroup = v1;
        check_snapshot(s);
        CHECK(to_json(s).dump().find("\"memory_peak_bytes\":null,") != std::string::npos);
    }
    SUBCASE("non-finite pressure averages are null, as dump() writes them") {
        c.psi.cpu_some_avg10 = std::nan("");
        c.psi.io_full_avg60 = -std::numeric_limits<double>::infinity();
        c.psi.memory_some_avg10 = -0.0;
        s.job_cgroup = c;
        check_snapshot(s);
    }
    SUBCASE("ill-formed UTF-8 in its path is declined, as dump() throws") {
        c.path = "/job_\xc3";
        s.job_cgroup = c;
        std::string text;
        CHECK_FALSE(append_snapshot_json(text, s));
        CHECK_THROWS(to_json(s).dump());
    }
}
