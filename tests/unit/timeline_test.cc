#include "libstallscope/timeline/timeline.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>

#include "libstallscope/rules/profiler.h"
#include "libstallscope/timeline/documents.h"

using namespace stallscope;

namespace {
std::string temp_path(const char* name) {
    char tmpl[] = "/tmp/stallscope-tl-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    return std::string(tmpl) + "/" + name;
}
}  // namespace

TEST_CASE("a timeline written line by line reads back header, samples, events and verdict") {
    const std::string path = temp_path("timeline.0.n1.jsonl");
    {
        TimelineWriter w;
        std::string error;
        REQUIRE(w.open(path, error));
        REQUIRE(w.append(Json{{"type", "header"}, {"schema", kTimelineSchema}}, error));
        Snapshot s;
        s.time = 100.5;
        s.host = "n1";
        s.host_stats.load1 = 2.5;
        REQUIRE(w.append(timeline_sample_line(s, Profile{}), error));
        REQUIRE(w.append(Json{{"type", "event"}, {"kind", "xid"}}, error));
        REQUIRE(w.append(Json{{"type", "verdict"}, {"label", "FAST"}}, error));
    }
    TimelineContents c;
    std::string error;
    REQUIRE(read_timeline(path, c, error));
    CHECK(c.header["schema"] == kTimelineSchema);
    REQUIRE(c.samples.size() == 1);
    CHECK(c.samples[0].time == 100.5);
    CHECK(c.samples[0].host_stats.load1 == 2.5);
    CHECK(c.events.size() == 1);
    CHECK(c.recorded_verdict["label"] == "FAST");
    CHECK(c.warnings.empty());
}

TEST_CASE("a torn last line (helper SIGKILLed mid-write) and a corrupt line are skipped with warnings") {
    const std::string path = temp_path("timeline.0.n2.jsonl");
    std::ofstream(path) << R"({"type":"sample","unix_time":1,"host":"n2"})"
                        << "\n"
                        << "garbage line\n"
                        << R"({"type":"sample","unix_time":2,"host":"n2"})"
                        << "\n"
                        << R"({"type":"sample","unix_ti)";
    TimelineContents c;
    std::string error;
    REQUIRE(read_timeline(path, c, error));
    CHECK(c.samples.size() == 2);
    REQUIRE(c.warnings.size() == 2);
    CHECK(c.warnings[0].find(":2: not a JSON object") != std::string::npos);
    CHECK(c.warnings[1].find(":4: torn last line") != std::string::npos);
    CHECK(c.recorded_verdict.is_null());
}

TEST_CASE("periodic --json output (plain snapshot lines) reads as samples too") {
    const std::string path = temp_path("cli.jsonl");
    std::ofstream(path) << R"({"schema":"stallscope.snapshot/1","time":"2026-11-22T05:00:00Z","host":"n3"})"
                        << "\n";
    TimelineContents c;
    std::string error;
    REQUIRE(read_timeline(path, c, error));
    REQUIRE(c.samples.size() == 1);
    CHECK(c.samples[0].time == 1795323600.0);
}

TEST_CASE(
    "a line whose type or schema is not a string is skipped with a warning, not thrown (fuzz finding)") {
    const std::string path = temp_path("timeline.0.n4.jsonl");
    std::ofstream(path) << R"({"type":"header","schema":"stallscope.timeline/1"})"
                        << "\n"
                        << R"({"type":1})"
                        << "\n"
                        << R"({"schema":["stallscope.snapshot/1"]})"
                        << "\n"
                        << R"({"type":"sample","unix_time":2,"host":"n4"})"
                        << "\n";
    TimelineContents c;
    std::string error;
    REQUIRE(read_timeline(path, c, error));
    CHECK(c.samples.size() == 1);
    REQUIRE(c.warnings.size() == 2);
    CHECK(c.warnings[0].find(":2: unknown line type") != std::string::npos);
    CHECK(c.warnings[1].find(":3: unknown line type") != std::string::npos);
}

TEST_CASE("a repeated key in a line: the last value wins, as nlohmann's parser would have it") {
    const std::string path = temp_path("timeline.0.n5.jsonl");
    std::ofstream(path) << R"({"type":"sample","unix_time":2,"host":"a","host":"b",)"
                        << R"("rdma":[{"device":"mlx5_0","counters":{"x":1,"y":2,"x":3}}]})"
                        << "\n";
    TimelineContents c;
    std::string error;
    REQUIRE(read_timeline(path, c, error));
    REQUIRE(c.samples.size() == 1);
    CHECK(c.samples[0].host == "b");
    REQUIRE(c.samples[0].rdma.size() == 1);
    CHECK(c.samples[0].rdma[0].counters == CounterMap{{"x", 3}, {"y", 2}});
}

TEST_CASE("a missing timeline is an error, not an empty result") {
    TimelineContents c;
    std::string error;
    CHECK_FALSE(read_timeline("/nonexistent/timeline.jsonl", c, error));
    CHECK(error.find("No such file") != std::string::npos);
}

TEST_CASE("the profiler gives the same profiles and verdict whether samples are moved in or copied") {
    Profiler copied, moved;
    for (int i = 0; i < 5; ++i) {
        Snapshot s;
        s.time = 1000 + i;
        s.host = "n5";
        s.host_stats.mem_total_bytes = 1000;
        s.host_stats.mem_available_bytes = 10;  // low memory: a SLOW reason with evidence
        s.host_stats.oom_kills = static_cast<std::uint64_t>(i / 3);
        NetInterface eth;
        eth.name = "eth0";
        eth.rx_bytes = 1000u * static_cast<unsigned>(i);
        eth.rx_errors = static_cast<std::uint64_t>(i * i);
        s.interfaces = {eth};
        const Profile a = copied.observe(s);
        const Snapshot kept = s;
        const Profile b = moved.observe(std::move(s));
        CHECK(to_json(a).dump() == to_json(b).dump());
        REQUIRE(moved.last_sample() != nullptr);
        CHECK(to_json(*moved.last_sample()).dump() == to_json(kept).dump());
    }
    CHECK(to_json(copied.verdict()).dump() == to_json(moved.verdict()).dump());
}

TEST_CASE("lines longer than the read buffer, blank lines and a torn last line after them read correctly") {
    const std::string path = temp_path("timeline.0.n6.jsonl");
    Snapshot big;
    big.time = 7;
    big.host = "n6";
    // 0.7 MB: longer than the 256 KiB read chunk, shorter than the 1 MiB line cap
    for (int i = 0; i < 30000; ++i) big.warnings.push_back("warning number " + std::to_string(i));
    {
        TimelineWriter w;
        std::string error;
        REQUIRE(w.open(path, error));
        for (int i = 0; i < 3; ++i) REQUIRE(w.append(timeline_sample_line(big, Profile{}), error));
    }
    std::ofstream(path, std::ios::app) << "\n\n"
                                       << R"({"type":"sample","unix_time":8,"host":"n6"})"
                                       << "\n"
                                       << R"({"type":"sample","unix_time":9,"host")";
    TimelineContents c;
    std::string error;
    REQUIRE(read_timeline(path, c, error));
    REQUIRE(c.samples.size() == 4);
    for (int i = 0; i < 3; ++i) CHECK(c.samples[static_cast<std::size_t>(i)].warnings == big.warnings);
    CHECK(c.samples[3].time == 8);
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0].find(":7: torn last line") != std::string::npos);
}

TEST_CASE("events between two samples: link state changes and Xids, nothing when nothing happened") {
    Snapshot before, now;
    before.time = 100;
    now.time = 101.5;
    RdmaPort port;
    port.device = "mlx5_0";
    port.port = 1;
    port.state = "ACTIVE";
    port.phys_state = "LinkUp";
    before.rdma = {port, port};
    before.rdma[1].port = 2;
    now.rdma = before.rdma;
    CHECK(events_between(nullptr, now).empty());
    CHECK(events_between(&before, now).empty());
    now.rdma[1].state = "DOWN";
    now.xid_events = {{79, "0000:18:00", 3, "critical", "GPU has fallen off the bus."}};
    const auto events = events_between(&before, now);
    REQUIRE(events.size() == 2);
    CHECK(events[0]["kind"] == "link_state");
    CHECK(events[0]["port"] == "mlx5_0/2");
    CHECK(events[0]["from"] == "ACTIVE/LinkUp");
    CHECK(events[0]["to"] == "DOWN/LinkUp");
    CHECK(events[0]["time"] == "1970-01-01T00:01:41.500Z");
    CHECK(events[1]["kind"] == "xid");
    CHECK(events[1]["code"] == 79);
    CHECK(events[1]["time"] == events[0]["time"]);
}
