// NodeStatsAccumulator (what the helper feeds per sample) and the verdict file's node_stats object.
#include <doctest/doctest.h>

#include "libstallscope/job/node_stats.h"
#include "libstallscope/timeline/documents.h"

using namespace stallscope;

namespace {

Snapshot sample(double t, std::uint64_t n) {
    Snapshot s;
    s.time = t;
    s.host = "gpu07";
    s.context.gpus = {"0", "1", "2"};
    for (int i : {1, 0}) {  // out of index order on purpose
        Gpu g;
        g.index = i;
        g.uuid = "GPU-" + std::to_string(i);
        g.utilization_pct = i == 0 ? 90.0 : 2.0;
        if (i == 0) g.power_w = 600.0, g.temperature_c = 60.0 + static_cast<double>(n);
        s.gpus.push_back(g);
    }
    RdmaPort p;
    p.device = "mlx5_0", p.port = 1, p.netdev = "ens1";
    p.counters = {
        {"port_rcv_data", n * 1000}, {"port_xmit_data", n * 2000}, {"port_rcv_packets", n * 1'000'000}};
    p.hw_counters = {{"out_of_sequence", n * 10}};
    s.rdma.push_back(p);
    NetInterface i;
    i.name = "ens1";  // no ethtool pause fields: pause not measured
    s.interfaces.push_back(i);
    return s;
}

}  // namespace

TEST_CASE("node stats: means over measured samples, null where nothing was measured, GPUs in index order") {
    NodeStatsAccumulator acc;
    for (std::uint64_t n = 0; n < 3; ++n) acc.add(sample(100.0 + 10.0 * static_cast<double>(n), n));
    const NodeStats s = acc.finish("gpu07");
    CHECK(s.samples == 3);
    CHECK(s.start_time == 100);
    CHECK(s.end_time == 120);
    CHECK(s.gpus_allocated == 3);
    CHECK(s.gpus_measured() == 2);
    REQUIRE(s.gpus.size() == 2);
    CHECK(s.gpus[0].index == 0);
    CHECK(*s.gpus[0].mean_util_pct == doctest::Approx(90));
    CHECK(*s.gpus[0].max_temperature_c == doctest::Approx(62));
    CHECK_FALSE(s.gpus[1].mean_power_w.has_value());  // never measured: not 0
    CHECK_FALSE(s.gpus[1].max_temperature_c.has_value());
    CHECK(*s.gpus[1].idle_share == doctest::Approx(1));
    REQUIRE(s.ports.size() == 1);
    CHECK(*s.ports[0].rx_bytes == doctest::Approx(4 * 2000));
    CHECK(*s.ports[0].loss_per_million_packets == doctest::Approx(10));
    CHECK_FALSE(s.ports[0].pause_occupancy.has_value());
    CHECK_FALSE(s.ports[0].cnp_per_second.has_value());
}

TEST_CASE("node stats survive the verdict file: to_json, verdict_document, typed read back") {
    NodeStatsAccumulator acc;
    for (std::uint64_t n = 0; n < 3; ++n) acc.add(sample(100.0 + 10.0 * static_cast<double>(n), n));
    const Json header{{"host", "gpu07"}, {"step_id", "0"}, {"job_id", "9"}};
    const Json doc = verdict_document(header, StepVerdict{}, "/t", {}, acc.to_json());
    CHECK(doc["schema"] == kVerdictSchema);
    REQUIRE(doc["node_stats"].is_object());
    CHECK(doc["node_stats"]["gpus"][1]["mean_power_w"].is_null());
    CHECK_FALSE(verdict_document(header, StepVerdict{}, "/t", {}).contains("node_stats"));
    std::vector<std::string> problems;
    const NodeStats back = node_stats_from_json(doc["node_stats"], problems);
    CHECK(problems.empty());
    CHECK(back.samples == 3);
    CHECK(back.gpus_allocated == 3);
    REQUIRE(back.gpus.size() == 2);
    CHECK(*back.gpus[0].mean_util_pct == doctest::Approx(90));
    CHECK_FALSE(back.gpus[1].mean_power_w.has_value());
    CHECK(*back.ports[0].loss_per_million_packets == doctest::Approx(10));
    CHECK(back.start_time == 100);
}

TEST_CASE("node stats from garbage: problems named, nothing thrown, values left empty") {
    std::vector<std::string> problems;
    const Json garbage = Json::parse(R"({"samples":"x","gpus":[1,{"mean_util_pct":[1]}],"ports":5})");
    const NodeStats s = node_stats_from_json(garbage, problems);
    CHECK(s.samples == 0);
    REQUIRE(s.gpus.size() == 1);
    CHECK_FALSE(s.gpus[0].mean_util_pct.has_value());
    CHECK(problems.size() == 4);
}

TEST_CASE("GPM activity (SM, tensor, DRAM) is averaged where measured and stays absent where not") {
    stallscope::Snapshot s;
    s.time = 100;
    stallscope::Gpu measured, plain;
    measured.index = 0, measured.uuid = "GPU-a", measured.utilization_pct = 100;
    measured.gpm = stallscope::GpmMetrics{};
    measured.gpm->sm_active_pct = 12;  // a busy-wait: "100 %" utilization, little SM activity
    measured.gpm->tensor_active_pct = 0;
    plain.index = 1, plain.uuid = "GPU-b", plain.utilization_pct = 90;
    s.gpus = {measured, plain};
    NodeStatsAccumulator acc;
    acc.add(s);
    s.time = 101;
    s.gpus[0].gpm->sm_active_pct = 14;
    acc.add(s);
    const NodeStats stats = acc.finish("h");
    REQUIRE(stats.gpus.size() == 2);
    REQUIRE(stats.gpus[0].mean_sm_active_pct);
    CHECK(*stats.gpus[0].mean_sm_active_pct == doctest::Approx(13));
    CHECK(stats.gpus[0].mean_tensor_active_pct == 0.0);
    CHECK_FALSE(stats.gpus[0].mean_dram_bandwidth_pct);  // GPM present, metric not: absent, not 0
    CHECK_FALSE(stats.gpus[1].mean_sm_active_pct);       // no GPM at all
    // Through the verdict's node_stats JSON and back.
    std::vector<std::string> problems;
    const NodeStats back = node_stats_from_json(to_json(stats), problems);
    CHECK(problems.empty());
    REQUIRE(back.gpus.size() == 2);
    CHECK(back.gpus[0].mean_sm_active_pct == stats.gpus[0].mean_sm_active_pct);
    CHECK_FALSE(back.gpus[1].mean_sm_active_pct);
}
