// The NCCL source as the sampler drives it: RAS on node 0 only, the poll runs off the sampling thread
// and is collected by a later sample, MONITOR events, version gating, Inspector dir, log files.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "fake_ras_server.h"
#include "libstallscope/sources/nccl/nccl_source.h"
#include "nccl_test_util.h"

using namespace stallscope;
using namespace stallscope::nccl;
using namespace stallscope::test;
using Clock = std::chrono::steady_clock;

namespace {

NcclSourceConfig config_for(const std::string& port) {
    NcclSourceConfig c;
    c.endpoint = RasEndpoint{"127.0.0.1", port};
    c.limits.connect = Millis(300);
    c.limits.handshake = Millis(300);
    c.limits.total = Millis(1000);
    c.ras_interval_seconds = 30;
    c.ras_start_delay_seconds = 0;
    return c;
}

Snapshot node(const std::string& node_id, double time) {
    Snapshot s;
    s.time = time;
    s.context.node_id = node_id;
    return s;
}

// Samples every 20 ms (all at the same snapshot time) until `done` or 3 s; each sample must be fast.
template <typename Done>
Snapshot sample_until(Source& src, const std::string& node_id, double time, Done done) {
    const auto start = Clock::now();
    while (true) {
        Snapshot s = node(node_id, time);
        const auto t0 = Clock::now();
        src.sample(s);
        CHECK(seconds_since(t0) < 0.1);  // never blocks the sampler on the network
        if (done(s) || seconds_since(start) > 3) return s;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace

TEST_CASE("node 0 polls STATUS in the background and reports it; other nodes never connect") {
    FakeRasBehaviour b;
    b.text_report = nccl_fixture("ras/text_dead_2.30.7.txt");
    FakeRasServer server(b);
    {
        auto other = make_nccl_source(config_for(server.port()));
        Snapshot s = node("1", 1000);
        other->sample(s);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        other->sample(s);
        CHECK(server.connections() == 0);
    }
    auto src = make_nccl_source(config_for(server.port()));
    const Snapshot s = sample_until(*src, "0", 1000, [](const Snapshot& x) { return !x.nccl.ras.empty(); });
    REQUIRE(s.nccl.ras.size() == 1);
    CHECK(s.nccl.ras[0].outcome == "ok");
    CHECK(s.nccl.ras[0].nccl_version == "2.30.7");
    CHECK(s.nccl.ras[0].dead_processes.size() == 1);
    CHECK(s.nccl.ras[0].time == 1000);
    // within the interval no second STATUS is started
    const auto count_status = [&] {
        const auto cmds = server.commands();
        return std::count(cmds.begin(), cmds.end(), "STATUS");
    };
    const auto polls = count_status();
    Snapshot later = node("0", 1010);
    src->sample(later);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    src->sample(later);
    CHECK(count_status() == polls);
}

TEST_CASE(
    "outside any job (no job id, no node id) the node polls its own NCCL processes; a job's node 1 never") {
    FakeRasBehaviour b;
    b.text_report = nccl_fixture("ras/text_healthy_2.30.7.txt");
    FakeRasServer server(b);
    {
        auto in_job = make_nccl_source(config_for(server.port()));
        Snapshot s = node("", 1000);
        s.context.job_id = "42";  // a job whose node id is unknown: not ours to poll
        in_job->sample(s);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        in_job->sample(s);
        CHECK(server.connections() == 0);
    }
    auto src = make_nccl_source(config_for(server.port()));
    const Snapshot s = sample_until(*src, "", 1000, [](const Snapshot& x) { return !x.nccl.ras.empty(); });
    REQUIRE(s.nccl.ras.size() == 1);
    CHECK(s.nccl.ras[0].outcome == "ok");
    CHECK(s.nccl.ras[0].nccl_version == "2.30.7");
}

TEST_CASE("a hung RAS service costs the sampler nothing; the poll ends as a timeout warning") {
    FakeRasBehaviour b;
    b.mode = FakeRasBehaviour::Mode::kHung;
    FakeRasServer server(b);
    auto src = make_nccl_source(config_for(server.port()));
    const auto start = Clock::now();
    const Snapshot s = sample_until(*src, "0", 1000, [](const Snapshot& x) { return !x.nccl.ras.empty(); });
    REQUIRE(s.nccl.ras.size() == 1);
    CHECK(s.nccl.ras[0].outcome == "timeout");
    CHECK(seconds_since(start) < 1.5);
    REQUIRE_FALSE(s.warnings.empty());
    CHECK(s.warnings[0].find("nccl ras: STATUS timeout") != std::string::npos);
}

TEST_CASE("refused (no NCCL process on the node) warns once, not every poll") {
    auto cfg = config_for(closed_port());
    cfg.ras_interval_seconds = 0;  // poll on every sample for this test
    auto src = make_nccl_source(cfg);
    int warnings = 0, reports = 0;
    for (int i = 0; i < 40 && reports < 3; ++i) {
        Snapshot s = node("0", 1000 + i);
        src->sample(s);
        reports += static_cast<int>(s.nccl.ras.size());
        warnings += static_cast<int>(s.warnings.size());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(reports >= 2);
    CHECK(warnings == 1);
}

TEST_CASE("MONITOR (2.29+) delivers PEER_DEAD events between STATUS polls") {
    FakeRasBehaviour b;
    b.text_report = nccl_fixture("ras/text_healthy_2.30.7.txt");
    b.json_report = nccl_fixture("ras/json_healthy_2.30.7.json");
    b.monitor = true;
    b.monitor_chunks = {nccl_fixture("monitor/json_all.txt")};
    FakeRasServer server(b);
    auto cfg = config_for(server.port());
    cfg.ras_mode = "monitor";
    auto src = make_nccl_source(cfg);
    const Snapshot s =
        sample_until(*src, "0", 1000, [](const Snapshot& x) { return !x.nccl.ras_events.empty(); });
    REQUIRE(s.nccl.ras_events.size() == 3);
    CHECK(s.nccl.ras_events[2].event == "PEER_DEAD");
    CHECK(s.nccl.ras.empty());  // monitor mode runs no STATUS collective
}

TEST_CASE("version gating: 2.26-2.29.1 are polled ten times less often; 2.29.2+ and 2.24 normally") {
    CHECK(status_interval_factor(0) == 1);
    CHECK(status_interval_factor(22403) == 1);
    CHECK(status_interval_factor(22605) == 10);
    CHECK(status_interval_factor(22809) == 10);
    CHECK(status_interval_factor(22901) == 10);
    CHECK(status_interval_factor(22902) == 1);
    CHECK(status_interval_factor(23007) == 1);
}

TEST_CASE("the source reads the Inspector dir and the configured logs") {
    NcclSourceConfig cfg;
    cfg.ras_mode = "off";
    cfg.inspector_dir = nccl_fixture_path("inspector");
    cfg.log_globs = {nccl_fixture_path("logs/torch_rank*.log")};
    auto src = make_nccl_source(cfg);
    Snapshot s = node("0", 1000);
    src->sample(s);
    REQUIRE(s.nccl.inspector.stragglers.size() == 1);
    CHECK(s.nccl.inspector.stragglers[0].rank == 2);
    CHECK(s.nccl.log_events.size() == 5);
    REQUIRE(s.warnings.size() == 1);  // garbage + v5.0 line in one file: the file is named once
    CHECK(s.warnings[0].find("node001-pid1001.log") != std::string::npos);
}

TEST_CASE("no RAS connection at all during the start delay (communicator init)") {
    FakeRasBehaviour b;
    b.text_report = nccl_fixture("ras/text_healthy_2.30.7.txt");
    b.monitor = true;
    FakeRasServer server(b);
    auto cfg = config_for(server.port());
    cfg.ras_start_delay_seconds = 60;
    auto src = make_nccl_source(cfg);
    for (double t : {1000.0, 1030.0, 1059.0}) {
        Snapshot s = node("0", t);
        src->sample(s);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(server.connections() == 0);
    const Snapshot s = sample_until(*src, "0", 1060, [](const Snapshot& x) { return !x.nccl.ras.empty(); });
    CHECK(s.nccl.ras.size() == 1);
    CHECK(server.connections() >= 1);
}
