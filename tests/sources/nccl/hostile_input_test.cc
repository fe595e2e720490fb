// Hostile NCCL/RAS input (issue 17): lines long enough to overflow libstdc++'s recursive std::regex
// (100 k-character RAS lines and 30 k-character log lines crashed the helper) and numbers too long for
// std::stoll/stoi (which threw). Each case here crashed or threw before the fix.
#include <doctest/doctest.h>

#include <string>

#include "libstallscope/sources/nccl/log_scan.h"
#include "libstallscope/sources/nccl/ras_parse.h"

using namespace stallscope;
using namespace stallscope::nccl;

namespace {

const std::string kHeader =
    "NCCL version 2.24.3 compiled with CUDA 12.4\n\nErrors\n======\n\n#0-0 (00a1c0e37b2d94f1) INCOMPLETE\n";

}  // namespace

TEST_CASE("RAS text: a 100 k-character line is skipped, the report around it still parsed") {
    const std::string report = kHeader + "  Rank 1 reported " + std::string(100000, 'a') +
                               " -- GPU 0 managed by process 1 on node n\n" + "  The missing ranks: 13,21\n" +
                               "\nWarnings\n========\n";
    const NcclRasReport r = parse_ras_text(report);
    CHECK(r.outcome == "ok");
    REQUIRE(r.communicators.size() == 1);
    REQUIRE(r.communicators[0].missing.size() == 2);
    CHECK(r.communicators[0].missing[1].peer.rank == 21);
}

TEST_CASE("RAS text: a missing-ranks list of a very large job (60 k characters) is read without a regex") {
    std::string list;
    for (int rank = 0; rank < 10000; ++rank) list += (rank ? "," : "") + std::to_string(rank);
    REQUIRE(list.size() > kMaxRegexLine);
    const NcclRasReport r =
        parse_ras_text(kHeader + "  The missing ranks: " + list + "\n\nWarnings\n========\n");
    REQUIRE(r.communicators.size() == 1);
    REQUIRE(r.communicators[0].missing.size() == 10000);
    CHECK(r.communicators[0].missing[9999].peer.rank == 9999);
}

TEST_CASE("RAS text: numbers beyond 64 bits saturate instead of throwing") {
    const std::string report = "NCCL version 2.30.7 compiled with CUDA 12.9\n\nCommunicators... (" +
                               std::string(400, '9') + "s)\n=============\n";
    NcclRasReport r;
    CHECK_NOTHROW(r = parse_ras_text(report));
    CHECK(r.outcome == "ok");
    CHECK(r.collection_seconds == 0);  // out of range: unknown, as when absent
}

TEST_CASE("RAS JSON: the comma repair survives a 100 k-character line and still repairs") {
    const std::string long_key = "{\n  \"" + std::string(100000, 'k') + "\": 1\n  \"b\": 2\n}\n";
    std::string repaired;
    CHECK_NOTHROW(repaired = repair_ras_json(long_key));
    CHECK(repaired == "{\n  \"" + std::string(100000, 'k') + "\": 1,\n  \"b\": 2\n}\n");
    CHECK(repair_ras_json("{\"a\": \"x\"\r\n \"b\": null\n\t\"c\": true\n}") ==
          "{\"a\": \"x\",\r\n \"b\": null,\n\t\"c\": true\n}");
    CHECK(repair_ras_json("[1\n2]\n\"a\"\n\"b\" x") == "[1\n2]\n\"a\"\n\"b\" x");  // no "key": line follows
}

TEST_CASE("RAS MONITOR: a 100 k-character event line is garbage, a 20-digit pid does not throw") {
    std::string buffer =
        "[2026-07-14 09:30:01] PEER_DEAD: Process " + std::string(100000, '1') +
        " on node n managing GPU 0\n" +
        "[2026-07-14 09:30:02] PEER_DEAD: Process 99999999999999999999 on node n managing GPU 0\n" +
        "[2026-07-14 09:30:03] PEER_DEAD: Process 42 on node n managing GPU 1\n";
    int garbage = 0;
    std::vector<NcclRasEvent> events;
    CHECK_NOTHROW(events = take_monitor_events(buffer, garbage));
    CHECK(garbage == 1);
    REQUIRE(events.size() == 2);
    CHECK(events[0].peer.pid == -1);
    CHECK(events[1].peer.pid == 42);
}

TEST_CASE("NCCL log: a 30 k-character WARN line is classified from its start; 20-digit pid and rank") {
    const std::string line =
        "node002:3490012:3490101 [4] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion "
        "from peer 10.0.0.1<35162> with status=12 opcode=129 len=0 vendor err 129 (Recv) " +
        std::string(30000, 'x') + " hca mlx5_10";
    NcclLogEvent e;
    REQUIRE(classify_log_line(line, e));
    CHECK(e.kind == "ib_wc_error");
    CHECK(e.pid == 3490012);
    CHECK(e.fields["status"] == "12");
    CHECK(e.line.size() <= 400);
    const std::string huge = "[rank99999999999999999999]:node1:99999999999999999999:1 [0] NCCL WARN boom";
    NcclLogEvent h;
    CHECK_NOTHROW(classify_log_line(huge, h));
    CHECK(h.kind == "nccl_warn");
    CHECK(h.rank == -1);
    CHECK(h.pid == -1);
    NcclLogEvent w;
    CHECK_NOTHROW(classify_log_line(std::string(30000, 'a') + " NCCL WARN " + std::string(30000, 'b'), w));
}

TEST_CASE("RAS MONITOR: an event that never ends is dropped past 1 MiB instead of growing the buffer") {
    std::string buffer = "{\"event\": \"" + std::string(kMaxPendingEvent, 'x');
    int garbage = 0;
    CHECK(take_monitor_events(buffer, garbage).empty());
    CHECK(buffer.empty());
    CHECK(garbage == 1);
    buffer = std::string(kMaxPendingEvent / 2, 'y');  // half as much: still waiting for its newline
    CHECK(take_monitor_events(buffer, garbage).empty());
    CHECK(buffer.size() == kMaxPendingEvent / 2);
}
