#include "libstallscope/model/snapshot_json.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>

#include "tests/unit/snapshot_fixture.h"

using namespace stallscope;
using stallscope::test::full_snapshot;

TEST_CASE("a snapshot survives the JSON round trip bit for bit") {
    const Snapshot s = full_snapshot();
    const std::string text = to_json(s).dump();
    std::vector<std::string> problems;
    const Snapshot back = snapshot_from_json(Json::parse(text), problems);
    CHECK(problems.empty());
    CHECK(to_json(back).dump() == text);
    CHECK(back.time == s.time);
    CHECK(back.host_stats.load5 == s.host_stats.load5);
    CHECK(back.gpus.at(0).power_w == s.gpus.at(0).power_w);
    CHECK(back.host_stats.mem_available_bytes == 18446744073709551615ull);
}

TEST_CASE("the snapshot JSON has the contract keys and writes missing counters as null, not 0") {
    const Json j = to_json(full_snapshot());
    CHECK(j["schema"] == "stallscope.snapshot/1");
    CHECK(j["time"] == "2026-11-20T07:40:01.123Z");
    CHECK(j["rdma"][0]["counters"]["symbol_error"].is_null());
    CHECK(j["host_stats"]["procs_running"].is_null());
    CHECK(j["interfaces"][0]["pause"]["tx_pause_storm_warning_events"].is_null());
    for (const char* key : {"context", "host_stats", "interfaces", "rdma", "gpus", "warnings"})
        CHECK(j.contains(key));
}

TEST_CASE("a timeline line with wrong types degrades to missing fields and named problems") {
    std::vector<std::string> problems;
    const Json bad = Json::parse(R"({"time": "2026-11-22T05:00:00Z", "host": "n1",
        "host_stats": {"load1": "high", "oom_kills": -3},
        "gpus": [{"index": 0, "utilization_pct": "97%"}, 5],
        "rdma": {"not": "an array"}})");
    const Snapshot s = snapshot_from_json(bad, problems);
    CHECK(s.time == 1795323600.0);
    CHECK_FALSE(s.host_stats.load1);
    CHECK_FALSE(s.host_stats.oom_kills);
    REQUIRE(s.gpus.size() == 1);
    CHECK_FALSE(s.gpus[0].utilization_pct);
    CHECK(s.rdma.empty());
    CHECK(problems.size() == 5);
}

TEST_CASE("a counter of the wrong type is missing and named with its port; reading into a port reuses it") {
    std::vector<std::string> problems;
    Json j = to_json(test::full_snapshot());
    j["rdma"][0]["counters"]["port_rcv_data"] = "lots";
    j["rdma"][0]["hw_counters"]["np_cnp_sent"] = -1;
    Snapshot s = snapshot_from_json(j, problems);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0] == "rdma[0].counters.port_rcv_data: expected an unsigned integer");
    CHECK(problems[1] == "rdma[0].hw_counters.np_cnp_sent: expected an unsigned integer");
    CHECK_FALSE(s.rdma[0].counters.at("port_rcv_data"));
    // Re-read into the same snapshot (the v2 reader's kept sample): same names, new values; then a
    // renamed counter rebuilds the map.
    problems.clear();
    j["rdma"][0]["counters"]["port_rcv_data"] = 5u;
    j["rdma"][0]["hw_counters"] = Json{{"rx_icrc_encapsulated", 9u}};
    REQUIRE(read_snapshot_element(j, SnapshotField::rdma, 0, s, problems));
    CHECK(problems.empty());
    CHECK(s.rdma[0].counters.at("port_rcv_data") == 5u);
    CHECK(s.rdma[0].hw_counters == CounterMap{{"rx_icrc_encapsulated", 9}});
    CHECK(to_json(s).dump() == j.dump());
    CHECK_FALSE(read_snapshot_element(j, SnapshotField::rdma, 1, s, problems));  // no such port
    CHECK_FALSE(read_snapshot_element(j, SnapshotField::host, 0, s, problems));
}

TEST_CASE("RFC 3339 times parse and print in UTC") {
    CHECK(parse_rfc3339("1970-01-01T00:00:01.500Z") == 1.5);
    CHECK(parse_rfc3339("2026-11-22T05:00:00+00:00") == 1795323600.0);
    CHECK_FALSE(parse_rfc3339("yesterday"));
    CHECK_FALSE(parse_rfc3339("2026-11-22T05:00:00+02:00"));
    CHECK(format_rfc3339(1.9996) == "1970-01-01T00:00:02.000Z");
    // Out of the four-digit years (a corrupt timeline): clamped, never undefined behaviour.
    CHECK(format_rfc3339(1.79e29) == "9999-12-31T23:59:59.000Z");
    CHECK(format_rfc3339(-1e300) == "0001-01-01T00:00:00.000Z");
    CHECK(format_rfc3339(std::numeric_limits<double>::quiet_NaN()) == "1970-01-01T00:00:00.000Z");
}

// What format_rfc3339 wrote before it kept the minute's text: gmtime_r and strftime for each time.
static std::string rfc3339_whole(double t) {
    t = std::clamp(t, -62135596800.0, 253402300799.0);
    double whole = std::floor(t);
    long millis = std::lround((t - whole) * 1000.0);
    if (millis == 1000) whole += 1, millis = 0;
    const std::time_t seconds = static_cast<std::time_t>(whole);
    std::tm tm{};
    ::gmtime_r(&seconds, &tm);
    char date[32], text[64];
    std::strftime(date, sizeof date, "%m-%dT%H:%M:%S", &tm);  // %Y would not pad year 1 to four digits
    std::snprintf(text, sizeof text, "%04d-%s.%03ldZ", tm.tm_year + 1900, date, millis);
    return text;
}

TEST_CASE("RFC 3339 text with the kept minute: the same text for times in order, out of order, anywhere") {
    std::vector<double> times;
    for (double t = 1795160340.0; t < 1795160340.0 + 400; t += 0.999) times.push_back(t);  // in order
    for (double t : {59.9996, 60.0, 119.9994, -0.0004, -0.5, -60.0, -61.25, -62135596800.0, 253402300799.0,
                     951782400.0 - 0.25, 951782400.0, 4107542399.5})  // leap days, the edges
        times.push_back(t);
    std::uint64_t state = 12345;  // and jumps anywhere in the range
    for (int i = 0; i < 2000; ++i) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        times.push_back(-62135596800.0 +
                        static_cast<double>(state >> 11) / 9007199254740992.0 * 315537897599.0);
    }
    for (const double t : times) {
        CAPTURE(t);
        CHECK(format_rfc3339(t) == rfc3339_whole(t));
    }
}
