#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "exposition_check.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/sinks/exposition_writer.h"
#include "libstallscope/sinks/prometheus_textfile.h"
#include "libstallscope/util/utf8.h"
#include "sink_test_data.h"

namespace fs = std::filesystem;
using namespace stallscope;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "stallscope-textfile-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() { fs::remove_all(path); }
    std::vector<std::string> entries() const {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
        return out;
    }
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Rates some_rates() {
    Rates r;
    r.interval_seconds = 1;
    return r;
}

test::ParsedExposition render_ok(PrometheusTextfile& sink, const Snapshot& s, const Profile& p,
                                 const Rates* r) {
    auto parsed = test::parse_exposition(sink.render(s, p, r));
    for (const auto& e : parsed.errors) FAIL_CHECK(e);
    return parsed;
}

}  // namespace

TEST_CASE("A DGX-like node renders valid exposition text with exactly the documented series bound") {
    PrometheusTextfile sink("/nonexistent/x.prom", {{"cluster", "h100-east"}});
    Rates rates = some_rates();
    auto parsed = render_ok(sink, test::full_snapshot(1000), test::slow_profile(990, 40), &rates);
    CHECK(parsed.samples.size() == textfile_bound::max_series(8, 8, 16));
    CHECK(parsed.samples.size() == 1687);
    CHECK(sink.series() == 1687);
    for (const auto& s : parsed.samples) {
        INFO(s.name);
        CHECK(s.name.starts_with("stallscope_"));
        CHECK(s.labels.at("cluster") == "h100-east");
        CHECK(s.labels.at("host") == "gpu-node-07");
        CHECK(s.labels.at("scheduler") == "slurm");
        // The job is named by one info series only: a per-job label multiplies every series by the jobs.
        CHECK(s.labels.count("job_id") == (s.name == "stallscope_job_info" ? 1u : 0u));
        CHECK(s.labels.count("step_id") == (s.name == "stallscope_job_info" ? 1u : 0u));
        CHECK(s.labels.count("pid") == 0);
    }
    const auto info = parsed.find("stallscope_job_info");
    REQUIRE(info.size() == 1);
    CHECK(info[0]->labels.at("job_id") == "4242");
    CHECK(info[0]->labels.at("step_id") == "0");
}

TEST_CASE("The series count does not grow with the jobs a node runs or the processes on its GPUs") {
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    Rates rates = some_rates();
    Snapshot s = test::full_snapshot(1000);
    const std::size_t first = render_ok(sink, s, test::slow_profile(990, 40), &rates).samples.size();
    s.context.job_id = "4243", s.job_cgroup->job_id = "4243";
    for (auto& g : s.gpus) {
        const GpuProcess other_user = g.processes->back();
        g.processes->resize(50, other_user);  // 50 processes per GPU
    }
    auto parsed = render_ok(sink, s, test::slow_profile(990, 40), &rates);
    CHECK(parsed.samples.size() == first);
    CHECK(parsed.find("stallscope_gpu_processes", {{"gpu", "2"}})[0]->value == 50);
    CHECK(parsed.find("stallscope_gpu_foreign_processes", {{"gpu", "2"}})[0]->value == 49);
}

TEST_CASE("GPU depth and job cgroup values carry their units") {
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    auto parsed = render_ok(sink, test::full_snapshot(1000), test::slow_profile(990), nullptr);
    CHECK(parsed.find("stallscope_gpu_sm_active_ratio", {{"gpu", "1"}})[0]->value == doctest::Approx(0.125));
    CHECK(parsed.find("stallscope_gpu_tensor_active_ratio", {{"gpu", "1"}})[0]->value == 0);
    CHECK(parsed.find("stallscope_gpu_nvlink_transmit_bytes_per_second", {{"gpu", "0"}})[0]->value ==
          1 << 30);
    CHECK(parsed.find("stallscope_gpu_nvlink_errors_total", {{"gpu", "3"}, {"kind", "crc"}})[0]->value == 21);
    CHECK(parsed.find("stallscope_gpu_pcie_replays_total", {{"gpu", "0"}})[0]->value == 2);
    CHECK(parsed.find("stallscope_gpu_mig_info", {{"gpu", "7"}, {"parent_gpu", "1"}, {"gpu_instance", "0"}})
              .size() == 1);
    // other_job 1 GiB + other_user (no figure): 1 GiB, the step's own 60 GiB not counted
    CHECK(parsed.find("stallscope_gpu_foreign_process_memory_bytes", {{"gpu", "0"}})[0]->value == 1 << 30);
    CHECK(parsed.find("stallscope_gpu_foreign_processes", {{"gpu", "0"}})[0]->value == 2);
    CHECK(parsed.find("stallscope_job_oom_kills_total")[0]->value == 1);
    CHECK(parsed.find("stallscope_job_memory_peak_bytes")[0]->value == 60.0 * (1 << 30));
    CHECK(parsed.find("stallscope_job_cpu_throttled_seconds_total")[0]->value == 2.5);
    CHECK(parsed.find("stallscope_job_pressure_ratio", {{"resource", "cpu"}, {"window", "10s"}})[0]->value ==
          doctest::Approx(0.5));
    CHECK(parsed.find("stallscope_job_pressure_stalled_seconds_total", {{"resource", "cpu"}})[0]->value == 3);
    CHECK(parsed.types.at("stallscope_job_oom_kills_total") == "counter");
    CHECK(parsed.types.at("stallscope_gpu_nvlink_errors_total") == "counter");
}

TEST_CASE(
    "A GPU without depth data (nvidia-smi, amdgpu) and a process outside a job leave those series out") {
    Snapshot s = test::full_snapshot(1000, {.gpus = 2, .rdma_ports = 0, .interfaces = 0});
    s.gpus[1].gpm.reset(), s.gpus[1].interconnect.reset(), s.gpus[1].mig.reset(), s.gpus[1].processes.reset();
    s.job_cgroup.reset();
    s.context.job_id.clear();
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    auto parsed = render_ok(sink, s, Profile{}, nullptr);
    CHECK(parsed.find("stallscope_gpu_sm_active_ratio").size() == 1);
    CHECK(parsed.find("stallscope_gpu_processes", {{"gpu", "1"}}).empty());  // unknown, not 0
    CHECK(parsed.find("stallscope_gpu_mig_info").size() == 1);
    CHECK(parsed.find("stallscope_job_info").empty());
    CHECK(parsed.find("stallscope_job_memory_bytes").empty());
}

TEST_CASE("Entities beyond the per-node caps are dropped and counted, never exported") {
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    Rates rates = some_rates();
    auto snapshot = test::full_snapshot(1000, {.gpus = 68, .rdma_ports = 20, .interfaces = 40});
    auto parsed = render_ok(sink, snapshot, test::slow_profile(990, 45), &rates);
    CHECK(parsed.samples.size() == textfile_bound::max_series(64, 16, 32));
    auto dropped = [&](const char* kind) {
        auto found = parsed.find("stallscope_textfile_entities_dropped", {{"kind", kind}});
        REQUIRE(found.size() == 1);
        return found[0]->value;
    };
    CHECK(dropped("gpu") == 4);  // 64 entries kept: 8 GPUs x 7 MIG slices + parents
    CHECK(dropped("rdma_port") == 4);
    CHECK(dropped("interface") == 8);
    CHECK(dropped("reason") == 13);
}

TEST_CASE("Values carry their units and the state sets have exactly one 1") {
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    auto parsed = render_ok(sink, test::full_snapshot(1000), test::slow_profile(990), nullptr);
    CHECK(parsed.find("stallscope_sample_interval_seconds").empty());  // one-shot: no rates
    double ones = 0;
    for (const auto* s : parsed.find("stallscope_profile_label")) ones += s->value;
    CHECK(ones == 1);
    CHECK(parsed.find("stallscope_profile_label", {{"label", "SLOW"}})[0]->value == 1);
    CHECK(parsed.find("stallscope_profile_bottleneck", {{"hint", "network"}})[0]->value == 1);
    CHECK(parsed.find("stallscope_profile_confidence_ratio")[0]->value == doctest::Approx(0.8));
    CHECK(parsed.find("stallscope_alerts_active", {{"severity", "warning"}})[0]->value == 2);
    CHECK(parsed.find("stallscope_alerts_active", {{"severity", "critical"}})[0]->value == 0);
    CHECK(parsed
              .find("stallscope_profile_reason_active",
                    {{"code", "fabric_congestion"}, {"subject", "mlx5_0/1"}})
              .size() == 1);
    CHECK(parsed.find("stallscope_gpu_power_watts", {{"gpu", "3"}, {"uuid", "GPU-00000003"}})[0]->value ==
          403.5);
    CHECK(parsed.find("stallscope_gpu_utilization_ratio", {{"gpu", "0"}})[0]->value == doctest::Approx(0.97));
    CHECK(parsed.find("stallscope_gpu_sm_clock_hertz", {{"gpu", "0"}})[0]->value == 1755e6);
    CHECK(parsed.find("stallscope_gpu_energy_joules_total", {{"gpu", "0"}})[0]->value ==
          doctest::Approx(123456));
    CHECK(parsed.find("stallscope_gpu_throttle_reason", {{"gpu", "1"}, {"reason", "sw_thermal_slowdown"}})[0]
              ->value == 1);
    CHECK(
        parsed.find("stallscope_gpu_throttle_reason", {{"gpu", "1"}, {"reason", "hw_slowdown"}})[0]->value ==
        0);
    CHECK(parsed.find("stallscope_rdma_port_receive_bytes_total", {{"device", "mlx5_2"}, {"port", "1"}})[0]
              ->value == 4000000002.0);
    CHECK(
        parsed.find("stallscope_rdma_hw_events_total", {{"device", "mlx5_1"}, {"counter", "np_cnp_sent"}})[0]
            ->value == 11);
    CHECK(parsed.find("stallscope_rdma_hw_events_total", {{"counter", "lifespan"}})
              .empty());  // not allow-listed
    CHECK(parsed.find("stallscope_rdma_port_events_total", {{"counter", "VL15_dropped"}}).empty());
    CHECK(parsed.find("stallscope_rdma_port_rate_bytes_per_second", {{"device", "mlx5_0"}})[0]->value ==
          50e9);
    auto duration = parsed.find("stallscope_network_pause_duration_seconds_total",
                                {{"interface", "ens3np0"}, {"direction", "rx"}, {"priority", "3"}});
    REQUIRE(duration.size() == 1);
    CHECK(duration[0]->value == 1.5);
    // rx_global_pause wins over rx_pause: one series per (direction, priority).
    auto global = parsed.find("stallscope_network_pause_frames_total",
                              {{"interface", "eth9"}, {"direction", "rx"}, {"priority", "global"}});
    REQUIRE(global.size() == 1);
    CHECK(global[0]->value == 11);
    CHECK(parsed.find("stallscope_network_receive_bytes_total", {{"interface", "lo"}}).empty());
    CHECK(parsed.find("stallscope_network_receive_bytes_total", {{"interface", "eth9"}})[0]->value == 109000);
    CHECK(parsed.types.at("stallscope_network_pause_frames_total") == "counter");
    CHECK(parsed.types.at("stallscope_gpu_temperature_celsius") == "gauge");
}

TEST_CASE("A missing or garbage counter is left out, never written as 0") {
    Snapshot s = test::full_snapshot(1000, {.gpus = 2, .rdma_ports = 1, .interfaces = 1});
    s.gpus[1].power_w.reset();
    s.gpus[1].throttle_reasons_mask.reset();
    s.gpus[1].throttle_reasons.clear();
    s.rdma[0].hw_counters["np_cnp_sent"].reset();  // "N/A (no PMA)" in the file
    s.rdma[0].rx_bytes.reset();
    s.interfaces[1].rx_bytes.reset();
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    auto parsed = render_ok(sink, s, test::slow_profile(990), nullptr);
    CHECK(parsed.find("stallscope_gpu_power_watts", {{"gpu", "0"}}).size() == 1);
    CHECK(parsed.find("stallscope_gpu_power_watts", {{"gpu", "1"}}).empty());
    CHECK(parsed.find("stallscope_gpu_throttle_reason", {{"gpu", "1"}}).empty());
    CHECK(parsed.find("stallscope_rdma_hw_events_total", {{"counter", "np_cnp_sent"}}).empty());
    CHECK(parsed.find("stallscope_rdma_port_receive_bytes_total").empty());
    CHECK(parsed.find("stallscope_network_receive_bytes_total").empty());
    CHECK(parsed.find("stallscope_network_transmit_bytes_total").size() == 1);
}

TEST_CASE("An empty snapshot still renders a valid document with the core families") {
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    auto parsed = render_ok(sink, Snapshot{}, Profile{}, nullptr);
    CHECK(parsed.find("stallscope_profile_label", {{"label", "UNKNOWN"}})[0]->value == 1);
    CHECK(parsed.find("stallscope_gpu_xid_errors_total").empty());
    CHECK(parsed.find("stallscope_build_info").size() == 1);
    CHECK(parsed.types.count("stallscope_gpu_power_watts") ==
          0);  // no HELP/TYPE for families without samples
}

TEST_CASE("Label values are escaped per the exposition format and read back unchanged") {
    const std::string nasty = "a\"b\\c\nd}e,f=g";
    Snapshot s;
    s.host = nasty;
    Profile p;
    p.reasons.push_back(
        {.code = "x", .category = "system", .severity = "info", .subject = "quote\" slash\\"});
    PrometheusTextfile sink("/nonexistent/x.prom", {{"cluster", "line1\nline2"}, {"bad-name", "dropped"}});
    const std::string& text = sink.render(s, p, nullptr);
    CHECK(text.find(R"(host="a\"b\\c\nd}e,f=g")") != std::string::npos);
    CHECK(text.find("bad-name") == std::string::npos);
    auto parsed = test::parse_exposition(text);
    for (const auto& e : parsed.errors) FAIL_CHECK(e);
    auto found = parsed.find("stallscope_profile_reason_active");
    REQUIRE(found.size() == 1);
    CHECK(found[0]->labels.at("host") == nasty);
    CHECK(found[0]->labels.at("cluster") == "line1\nline2");
    CHECK(found[0]->labels.at("subject") == "quote\" slash\\");

    std::string help;
    append_escaped_help(help, "a\\b\nc\"");
    CHECK(help == "a\\\\b\\nc\"");  // HELP escapes backslash and newline, not quotes
    std::string numbers;
    append_double(numbers, 0.0 / 0.0);
    numbers += ' ';
    append_double(numbers, -1.0 / 0.0);
    numbers += ' ';
    append_double(numbers, 1e21);
    CHECK(numbers == "NaN -Inf 1e+21");
}

TEST_CASE("Label values that are not UTF-8 become U+FFFD: node_exporter drops a whole file for one") {
    Snapshot s;
    s.host = "n\xe9ud-\xc3\xa9";  // a Latin-1 byte, then a well-formed "é"
    Profile p;
    p.reasons.push_back({.code = "x", .category = "system", .severity = "info", .subject = "eth\xff\xfe"});
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    const std::string& text = sink.render(s, p, nullptr);
    const char* const end = text.data() + text.size();
    for (const char* c = text.data(); c != end; ++c) {
        if (static_cast<unsigned char>(*c) < 0x80) continue;
        const std::size_t n = utf8_sequence_length(c, end);
        REQUIRE_MESSAGE(n > 0, "byte " << (c - text.data()) << " starts no UTF-8 sequence");
        c += n - 1;
    }
    const auto parsed = test::parse_exposition(text);  // kept: find() points into it
    for (const auto& e : parsed.errors) FAIL_CHECK(e);
    auto found = parsed.find("stallscope_profile_reason_active");
    REQUIRE(found.size() == 1);
    CHECK(found[0]->labels.at("host") == "n\xef\xbf\xbdud-\xc3\xa9");
    CHECK(found[0]->labels.at("subject") == "eth\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("Xid codes accumulate into a counter, once per sample") {
    PrometheusTextfile sink("/nonexistent/x.prom", {});
    Snapshot s = test::full_snapshot(1000, {.gpus = 2, .rdma_ports = 0, .interfaces = 0});
    s.gpus[1].xid = {79, 48};
    sink.render(s, {}, nullptr);
    auto parsed = render_ok(sink, s, {}, nullptr);  // same sample twice: counted once
    CHECK(parsed.find("stallscope_gpu_xid_errors_total", {{"gpu", "1"}})[0]->value == 2);
    CHECK(parsed.find("stallscope_gpu_xid_errors_total", {{"gpu", "0"}})[0]->value == 0);
    s.time = 1001;
    s.gpus[1].xid = {13};
    parsed = render_ok(sink, s, {}, nullptr);
    CHECK(parsed.find("stallscope_gpu_xid_errors_total", {{"gpu", "1"}})[0]->value == 3);
    CHECK(parsed.find("stallscope_gpu_xid_last_code", {{"gpu", "1"}})[0]->value == 13);
}

TEST_CASE("write() replaces the file atomically, mode 0644, and leaves no temp file") {
    TempDir dir;
    const fs::path file = dir.path / "stallscope.prom";
    PrometheusTextfile sink(file.string(), {});
    std::string error;
    mode_t old_umask = ::umask(077);
    bool ok = sink.write(test::full_snapshot(1000, {.gpus = 1}), test::slow_profile(990), nullptr, error);
    ::umask(old_umask);
    REQUIRE_MESSAGE(ok, error);
    CHECK(dir.entries() == std::vector<std::string>{"stallscope.prom"});
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0644);
    auto first = test::parse_exposition(slurp(file));
    CHECK(first.errors.empty());
    CHECK(first.find("stallscope_profile_label", {{"label", "SLOW"}})[0]->value == 1);
    const auto first_inode = st.st_ino;

    REQUIRE(sink.write(test::full_snapshot(1001, {.gpus = 1}), Profile{}, nullptr, error));
    auto second = test::parse_exposition(slurp(file));
    CHECK(second.find("stallscope_profile_label", {{"label", "UNKNOWN"}})[0]->value == 1);
    CHECK(second.find("stallscope_sample_timestamp_seconds")[0]->value == 1001);
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK(st.st_ino != first_inode);  // a new file renamed over the old one, not rewritten in place
    CHECK(dir.entries() == std::vector<std::string>{"stallscope.prom"});

    sink.remove();
    CHECK(dir.entries().empty());
    sink.remove();  // idempotent
}

TEST_CASE("write() into a missing directory fails with a message naming the path") {
    PrometheusTextfile sink("/nonexistent-stallscope-dir/a.prom", {});
    std::string error;
    CHECK_FALSE(sink.write(Snapshot{}, Profile{}, nullptr, error));
    CHECK(error.find("/nonexistent-stallscope-dir/") != std::string::npos);
}

TEST_CASE("A symlink planted at the temp name is not followed") {
    TempDir dir;
    const fs::path file = dir.path / "s.prom";
    const fs::path victim = dir.path / "victim";
    std::ofstream(victim) << "keep";
    PrometheusTextfile sink(file.string(), {});
    fs::create_symlink(
        victim, dir.path / ("." + file.filename().string() + "." + std::to_string(::getpid()) + ".tmp"));
    std::string error;
    CHECK_FALSE(sink.write(Snapshot{}, Profile{}, nullptr, error));
    CHECK(slurp(victim) == "keep");
}

TEST_CASE("min_interval_seconds skips writes in between but keeps counting Xids") {
    TempDir dir;
    const fs::path file = dir.path / "s.prom";
    PrometheusTextfile sink(file.string(), {}, {.min_interval_seconds = 10});
    Snapshot s = test::full_snapshot(1000, {.gpus = 1, .rdma_ports = 0, .interfaces = 0});
    std::string error;
    REQUIRE(sink.write(s, {}, nullptr, error));
    s.time = 1005;
    s.gpus[0].xid = {31};
    REQUIRE(sink.write(s, {}, nullptr, error));  // skipped
    CHECK(test::parse_exposition(slurp(file)).find("stallscope_sample_timestamp_seconds")[0]->value == 1000);
    s.time = 1010;
    s.gpus[0].xid.clear();
    REQUIRE(sink.write(s, {}, nullptr, error));
    auto parsed = test::parse_exposition(slurp(file));
    CHECK(parsed.find("stallscope_sample_timestamp_seconds")[0]->value == 1010);
    CHECK(parsed.find("stallscope_gpu_xid_errors_total")[0]->value == 1);
}
