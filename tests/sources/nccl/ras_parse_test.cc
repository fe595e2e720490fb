// RAS report parsers on fixtures reconstructed from the NCCL/RCCL writer format strings (fixtures/nccl/ras)
// and MONITOR streams (fixtures/nccl/monitor).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "libstallscope/sources/nccl/ras_parse.h"

using namespace stallscope;
using namespace stallscope::nccl;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream f(std::string(STALLSCOPE_FIXTURES_DIR) + "/nccl/" + name, std::ios::binary);
    REQUIRE(f);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

const NcclCommunicator* comm(const NcclRasReport& r, const std::string& hash) {
    for (const auto& c : r.communicators)
        if (c.hash == hash) return &c;
    return nullptr;
}

}  // namespace

TEST_CASE("a healthy 2.30.7 text report has the version, three communicators and no problems") {
    const auto r = parse_ras_report(fixture("ras/text_healthy_2.30.7.txt"));
    CHECK(r.outcome == "ok");
    CHECK(r.format == "text");
    CHECK_FALSE(r.partial);
    CHECK(r.nccl_version == "2.30.7");
    CHECK(r.collection_seconds == doctest::Approx(0.004));
    CHECK(r.communicators_count == 3);  // a row is a group: 1 + 2 communicators
    CHECK(r.communicators.empty());
    CHECK(r.dead_processes.empty());
    CHECK(r.timeouts == 0);
}

TEST_CASE("an INCOMPLETE report names the missing process, the missing ranks and the timeouts") {
    const auto r = parse_ras_text(fixture("ras/text_incomplete_2.30.7.txt"));
    CHECK(r.outcome == "ok");
    REQUIRE(r.missing_processes.size() == 1);
    CHECK(r.missing_processes[0].pid == 3487984);
    CHECK(r.missing_processes[0].host == "10.0.0.2");
    CHECK(r.missing_processes[0].gpus == "5");
    CHECK(r.timeouts == 2);
    const auto* c = comm(r, "cf264af53edbe986");
    REQUIRE(c);
    REQUIRE(c->missing.size() == 1);
    CHECK(c->missing[0].peer.rank == 13);
    CHECK(c->missing[0].unresponsive);
    CHECK_FALSE(c->missing[0].considered_dead);
    REQUIRE(comm(r, "05a1c0e37b2d94f1"));
    CHECK(comm(r, "05a1c0e37b2d94f1")->missing[0].peer.rank == 5);
}

TEST_CASE("a DEAD block marks the process dead and its missing ranks considered_dead") {
    const auto r = parse_ras_text(fixture("ras/text_dead_2.30.7.txt"));
    REQUIRE(r.dead_processes.size() == 1);
    CHECK(r.dead_processes[0].pid == 3487984);
    const auto* c = comm(r, "cf264af53edbe986");
    REQUIRE(c);
    REQUIRE(c->missing.size() == 1);
    CHECK(c->missing[0].considered_dead);
}

TEST_CASE("a count MISMATCH names the itemised lagging rank and the majority count") {
    const auto r = parse_ras_text(fixture("ras/text_mismatch_2.30.7.txt"));
    const auto* c = comm(r, "27a079b828ff1a75");
    REQUIRE(c);
    REQUIRE(c->mismatches.size() == 1);
    const auto& m = c->mismatches[0];
    CHECK(m.function == "AllReduce");
    CHECK(m.max_count == 6650);
    REQUIRE(m.laggards.size() == 1);
    CHECK(m.laggards[0] == std::pair<int, std::uint64_t>{9, 6649});
    CHECK(m.unlisted_laggards == 0);
}

TEST_CASE("an async error and an ABORT status land on the same rank") {
    const auto r = parse_ras_text(fixture("ras/text_async_error_2.30.7.txt"));
    const auto* c = comm(r, "9e17999afaa87dbb");
    REQUIRE(c);
    REQUIRE(c->errors.size() == 1);
    CHECK(c->errors[0].peer.rank == 12);
    CHECK(c->errors[0].error == "Remote process error");
    CHECK(c->errors[0].async_error == 6);
    CHECK(c->errors[0].abort);
    CHECK(c->errors[0].peer.pid == 501877);
    CHECK(c->status == "ABORT");
    CHECK(c->mismatches.empty());  // a status mismatch is not a count mismatch
}

TEST_CASE("2.24 wording: missing-rank list, summed counts, itemised group members behind the majority") {
    const auto r = parse_ras_text(fixture("ras/text_incomplete_mismatch_2.24.3.txt"));
    CHECK(r.nccl_version == "2.24.3");
    CHECK(r.collection_seconds == doctest::Approx(1.05));
    CHECK(r.communicators_count == 2);
    const auto* inc = comm(r, "00a1c0e37b2d94f1");
    REQUIRE(inc);
    REQUIRE(inc->missing.size() == 2);
    CHECK(inc->missing[1].peer.rank == 21);
    const auto* mm = comm(r, "27a079b828ff1a75");
    REQUIRE(mm);
    REQUIRE(mm->mismatches.size() == 1);
    CHECK(mm->mismatches[0].function == "collective");
    CHECK(mm->mismatches[0].max_count == 1200);
    CHECK(mm->mismatches[0].laggards == std::vector<std::pair<int, std::uint64_t>>{{3, 1199}, {4, 1199}});
}

TEST_CASE("an RCCL header is recognised and marked") {
    const auto r = parse_ras_report(fixture("ras/text_rccl_healthy_2.28.3.txt"));
    CHECK(r.outcome == "ok");
    CHECK(r.nccl_version == "rccl-2.28.3");
    CHECK(nccl_version_code(r.nccl_version) == 22803);
    CHECK(r.communicators_count == 1);
}

TEST_CASE("a report cut before Warnings is partial; garbage is a parse error") {
    const auto cut = parse_ras_report(fixture("ras/text_truncated.txt"));
    CHECK(cut.outcome == "ok");
    CHECK(cut.partial);
    const auto junk = parse_ras_report(fixture("ras/garbage.txt"));
    CHECK(junk.outcome == "parse_error");
    CHECK(parse_ras_report("").outcome == "parse_error");
    CHECK(parse_ras_report("{\"nccl_version\": ").outcome == "parse_error");
}

TEST_CASE("valid JSON (2.29.2+): missing rank, counts, collection time") {
    const auto r = parse_ras_report(fixture("ras/json_missing_rank_2.30.7.json"));
    CHECK(r.outcome == "ok");
    CHECK(r.format == "json");
    CHECK(r.nccl_version == "2.30.7");
    CHECK(r.timeouts == 2);
    CHECK(r.collection_seconds == doctest::Approx(2.051));
    REQUIRE(r.communicators.size() == 1);
    const auto& c = r.communicators[0];
    CHECK(c.hash == "cf264af53edbe986");
    CHECK(c.size == 4);
    CHECK(c.ranks_answered == 3);
    CHECK(c.status == "RUNNING");
    REQUIRE(c.missing.size() == 1);
    CHECK(c.missing[0].peer.rank == 3);
    CHECK(c.missing[0].unresponsive);
    CHECK(c.mismatches.empty());
    CHECK(c.max_counts.at("AllReduce") == 6650);
}

TEST_CASE("the invalid JSON of 2.28.7/2.28.9 (missing comma after nvml_dev) is repaired") {
    const std::string bad = fixture("ras/json_missing_rank_2.28.9_invalid.json");
    CHECK(nlohmann::json::parse(bad, nullptr, false).is_discarded());
    CHECK_FALSE(nlohmann::json::parse(repair_ras_json(bad), nullptr, false).is_discarded());
    const auto r = parse_ras_report(bad);
    CHECK(r.outcome == "ok");
    CHECK(r.nccl_version == "2.28.9");
    REQUIRE(r.communicators.size() == 1);
    REQUIRE(r.communicators[0].missing.size() == 1);
    CHECK(r.communicators[0].missing[0].peer.pid == 3487984);
    // the repair leaves valid JSON alone
    const std::string good = fixture("ras/json_missing_rank_2.30.7.json");
    CHECK(nlohmann::json::parse(repair_ras_json(good)) == nlohmann::json::parse(good));
}

TEST_CASE("JSON: dead rank, async error with abort, count laggard; init_state 7 is not an error") {
    const auto r = parse_ras_report(fixture("ras/json_dead_async_error_2.30.7.json"));
    REQUIRE(r.communicators.size() == 2);
    const auto& c = r.communicators[0];
    CHECK(c.hash == "05a1c0e37b2d94f1");  // "0x5a1c0e37b2d94f1": zero-padded like the text form
    REQUIRE(r.dead_processes.size() == 1);
    CHECK(r.dead_processes[0].pid == 3487984);
    REQUIRE(c.errors.size() == 1);
    CHECK(c.errors[0].peer.rank == 2);
    CHECK(c.errors[0].async_error == 6);
    CHECK(c.errors[0].abort);
    CHECK(c.status == "ABORT");
    REQUIRE(c.mismatches.size() == 1);
    CHECK(c.mismatches[0].laggards == std::vector<std::pair<int, std::uint64_t>>{{1, 6649}});
    const auto healthy = parse_ras_report(fixture("ras/json_healthy_2.30.7.json"));
    REQUIRE(healthy.communicators.size() == 1);
    CHECK(healthy.communicators[0].errors.empty());
}

TEST_CASE("MONITOR text stream: peers, address-only peers, trailing space of empty details") {
    std::string buf = fixture("monitor/text_all.txt");
    int garbage = 0;
    const auto ev = take_monitor_events(buf, garbage);
    CHECK(garbage == 0);
    CHECK(buf.empty());
    REQUIRE(ev.size() == 4);
    CHECK(ev[0].event == "PEER_UNRESPONSIVE");
    CHECK(ev[0].peer.pid == 3487984);
    CHECK(ev[0].details == "peer not responding for 5s (keepalive warning)");
    CHECK(ev[2].peer.host == "10.0.0.2<43512>");
    CHECK(ev[3].event == "PEER_DEAD");
    CHECK(ev[3].timestamp == "2026-07-14 09:22:05");
    CHECK(ev[3].details.empty());
}

TEST_CASE("MONITOR JSON stream split across reads yields each event once, when complete") {
    const std::string all = fixture("monitor/json_all.txt");
    std::string buf;
    std::vector<NcclRasEvent> events;
    int garbage = 0;
    for (std::size_t off = 0; off < all.size(); off += 37) {  // arbitrary read() boundaries
        buf += all.substr(off, 37);
        for (auto& e : take_monitor_events(buf, garbage)) events.push_back(std::move(e));
    }
    CHECK(garbage == 0);
    REQUIRE(events.size() == 3);
    CHECK(events[0].group == "TRACE");
    CHECK(events[1].peer.host == "10.0.0.2<43512>");
    CHECK(events[2].event == "PEER_DEAD");
    CHECK(events[2].group == "LIFECYCLE");
    CHECK(events[2].peer.gpus == "5");
    std::string junk = "not an event\n{\"no\": \"event key\"}\n[partial";
    CHECK(take_monitor_events(junk, garbage).empty());
    CHECK(garbage == 2);
    CHECK(junk == "[partial");  // an incomplete line waits for more bytes
}

TEST_CASE(
    "absurd communicator counts cap at 2^30, summed over the rows too (fuzz: two rows overflowed int)") {
    std::string text = fixture("ras/text_healthy_2.30.7.txt");
    for (const char* row : {"    0         1         2", "    1         2         1"}) {
        const auto at = text.find(row);
        REQUIRE(at != std::string::npos);
        text.replace(at + 14, 1, "99999999999999999999");  // the "Comms in group" column
    }
    const auto r = parse_ras_report(text);
    CHECK(r.outcome == "ok");
    CHECK(r.communicators_count == (1 << 30));
}

TEST_CASE("versions and hashes normalise") {
    CHECK(nccl_version_code("2.28.9") == 22809);
    CHECK(nccl_version_code("2.30.7+cuda12.9") == 23007);
    CHECK(nccl_version_code("garbage") == 0);
    CHECK(nccl_version_code("rccl-2.18.3") == 21803);
    CHECK(nccl_version_code("2.28") == 22800);
    // Numbers NCCL_VERSION_CODE cannot hold are not a version (the fuzzer's "rccl-1111111" overflowed int).
    CHECK(nccl_version_code("rccl-1111111") == 0);
    CHECK(nccl_version_code("2.1000.1") == 0);
    CHECK(nccl_version_code("2.28.100") == 0);
    CHECK(nccl_version_code("-2.28.9") == 0);
    CHECK(nccl_version_code("99999999999.1.1") == 0);
    CHECK(normalize_comm_hash("0xCF264AF53EDBE986") == "cf264af53edbe986");
    CHECK(normalize_comm_hash("5a1c0e37b2d94f1") == "05a1c0e37b2d94f1");
}
