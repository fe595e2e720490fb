// Inspector JSONL: record parsing (2.30 coll/p2p, 2.28 sampling line, "nan", garbage, future format),
// the cross-rank join that finds the straggler, and the file tail (torn last line, byte budget).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "libstallscope/sources/nccl/inspector.h"
#include "libstallscope/sources/nccl/tail_file.h"
#include "nccl_test_util.h"

using namespace stallscope;
using namespace stallscope::nccl;
using namespace stallscope::test;

namespace {

std::vector<InspectorRecord> read_dir(int& rejected, std::vector<std::string>* whys = nullptr) {
    std::vector<InspectorRecord> out;
    for (const auto& entry : std::filesystem::directory_iterator(nccl_fixture_path("inspector"))) {
        if (!is_inspector_file_name(entry.path().filename().string())) continue;
        TailFile tail(entry.path().string(), 1 << 20);
        std::vector<std::string> lines;
        REQUIRE(tail.read_lines(1 << 20, lines).empty());
        for (const auto& line : lines) {
            std::string why;
            if (auto r = parse_inspector_line(line, why))
                out.push_back(*r);
            else {
                ++rejected;
                if (whys) whys->push_back(why);
            }
        }
    }
    return out;
}

}  // namespace

TEST_CASE("Inspector file names are <host>-pid<pid>.log") {
    CHECK(is_inspector_file_name("node001-pid3487001.log"));
    CHECK(is_inspector_file_name("gpu-node-7.cluster.local-pid12.log"));
    CHECK_FALSE(is_inspector_file_name("README"));
    CHECK_FALSE(is_inspector_file_name("node001-pid.log"));
    CHECK_FALSE(is_inspector_file_name("nccl_inspector_metrics_GPU-1.prom"));
}

TEST_CASE("a 2.30 collective record, a p2p record and a 2.28 line (no comm_name) parse") {
    std::string why;
    const auto line = nccl_fixture("inspector/node001-pid1001.log");
    const auto first = parse_inspector_line(line.substr(0, line.find('\n')), why);
    REQUIRE(first);
    CHECK(first->comm == "cf264af53edbe986");
    CHECK(first->coll == "AllReduce");
    CHECK(first->sn == 100);
    CHECK(first->msg_size_bytes == 268435456);
    CHECK(first->rank == 0);
    CHECK(first->n_ranks == 4);
    CHECK(first->host == "node001");
    CHECK(first->pid == 1001);
    REQUIRE(first->busbw_gbs);
    int rejected = 0;
    const auto all = read_dir(rejected);
    bool p2p = false, rank3 = false;
    for (const auto& r : all) {
        if (r.p2p && r.coll == "Send" && r.sn == 41 && r.comm == "05a1c0e37b2d94f1") p2p = true;
        if (r.rank == 3) rank3 = true;  // rank 3's file is in the 2.28 shape
    }
    CHECK(p2p);
    CHECK(rank3);
}

TEST_CASE("garbage, a future format version and a torn last line are rejected or held back") {
    int rejected = 0;
    std::vector<std::string> whys;
    const auto all = read_dir(rejected, &whys);
    CHECK(rejected == 2);  // "this is not json" and the v5.0 line; the torn line never left the tail
    CHECK(std::count(whys.begin(), whys.end(), "not a JSON object") == 1);
    CHECK(std::any_of(whys.begin(), whys.end(),
                      [](const std::string& w) { return w.find("v5.0") != std::string::npos; }));
    bool nan_seen = false;
    for (const auto& r : all)
        if (r.coll == "AllGather" && r.sn == 500) nan_seen = !r.busbw_gbs.has_value();
    CHECK(nan_seen);
    CHECK(all.size() == 12 * 4 + 2);  // 12 AllReduce instances x 4 ranks + p2p + nan record
}

TEST_CASE(
    "the rank that arrives last in most joined instances is the straggler, not the single lowest sample") {
    int rejected = 0;
    InspectorAggregator agg;
    for (const auto& r : read_dir(rejected)) agg.add(r);
    const NcclInspector out = agg.take_sample();
    REQUIRE(out.stragglers.size() == 1);
    const auto& s = out.stragglers[0];
    CHECK(s.comm == "cf264af53edbe986");
    CHECK(s.coll == "AllReduce");
    CHECK(s.rank == 2);
    CHECK(s.host == "node002");
    CHECK(s.instances == 10);  // instances 4 and 9 have no significant skew
    CHECK(s.late == 10);
    CHECK(s.median_skew_us > 400);
    // per-rank statistics: rank 0 has 12 AllReduce records of 256 MiB
    bool found = false;
    for (const auto& c : out.collectives)
        if (c.rank == 0 && c.coll == "AllReduce") {
            found = true;
            CHECK(c.records == 12);
            CHECK(c.median_exec_us == doctest::Approx(1410).epsilon(0.02));
            CHECK(c.median_busbw_gbs > 100);
        }
    CHECK(found);
    // the next sample has no new records: no statistics, the straggler window persists
    const NcclInspector next = agg.take_sample();
    CHECK(next.collectives.empty());
    CHECK(next.stragglers.size() == 1);
}

TEST_CASE("random jitter names no straggler") {
    InspectorAggregator agg;
    for (int sn = 0; sn < 40; ++sn)
        for (int rank = 0; rank < 4; ++rank) {
            InspectorRecord r;
            r.comm = "c";
            r.coll = "AllReduce";
            r.sn = static_cast<std::uint64_t>(sn);
            r.rank = rank;
            r.n_ranks = 4;
            r.exec_us = (rank == sn % 4) ? 500 : 1000;  // every rank late in turn
            agg.add(r);
        }
    CHECK(agg.take_sample().stragglers.empty());
}

TEST_CASE("the tail keeps offsets, waits for a torn line, and restarts after truncation") {
    const auto dir =
        std::filesystem::temp_directory_path() / ("stallscope-tail-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "h-pid1.log").string();
    { std::ofstream(path) << "one\ntw"; }
    TailFile tail(path, 1 << 20);
    std::vector<std::string> lines;
    CHECK(tail.read_lines(1 << 20, lines).empty());
    CHECK(lines == std::vector<std::string>{"one"});
    { std::ofstream(path, std::ios::app) << "o\nthree\n"; }
    lines.clear();
    tail.read_lines(4, lines);  // byte budget: only 4 new bytes this time
    CHECK(lines == std::vector<std::string>{"two"});
    lines.clear();
    tail.read_lines(1 << 20, lines);
    CHECK(lines == std::vector<std::string>{"three"});
    { std::ofstream(path, std::ios::trunc) << "new\n"; }  // re-opened with "w"
    lines.clear();
    tail.read_lines(1 << 20, lines);
    CHECK(lines == std::vector<std::string>{"new"});
    CHECK_FALSE(TailFile(path + ".missing", 10).read_lines(10, lines).empty());
}

// Regression (fuzz finding, tests/fuzz/corpus/nccl_logs/regression_inspector_id_not_string): nlohmann's
// value("id", std::string()) threw type_error out of this "never throws" parser when a key existed with
// another type; in the helper that failed the whole NCCL source for the sample.
TEST_CASE("an Inspector record with any field of the wrong type is declined, never thrown") {
    const std::string line = [] {
        const auto text = nccl_fixture("inspector/node001-pid1001.log");
        return text.substr(0, text.find('\n'));
    }();
    std::string why;
    REQUIRE(parse_inspector_line(line, why));
    const std::vector<std::pair<std::string, std::string>> swaps = {
        {"\"id\":", "\"id\":{\"x\":1},\"was_id\":"},
        {"\"rank\":", "\"rank\":\"zero\",\"was_rank\":"},
        {"\"n_ranks\":", "\"n_ranks\":[4],\"was_n_ranks\":"},
        {"\"hostname\":", "\"hostname\":true,\"was_hostname\":"},
        {"\"pid\":", "\"pid\":1.5,\"was_pid\":"},
        {"\"inspector_output_format_version\":", "\"inspector_output_format_version\":4,\"was_v\":"},
        {"\"coll\":", "\"coll\":[],\"was_coll\":"},
        {"\"coll_sn\":", "\"coll_sn\":-1,\"was_sn\":"},
        {"\"coll_msg_size_bytes\":", "\"coll_msg_size_bytes\":\"big\",\"was_size\":"},
    };
    for (const auto& swap : swaps) {
        const auto& key = swap.first;  // not a structured binding: clang 14 cannot capture one in CAPTURE
        const auto& replacement = swap.second;
        CAPTURE(key);
        const auto at = line.find(key);
        REQUIRE(at != std::string::npos);
        std::string bad = line;
        bad.replace(at, key.size(), replacement);
        std::optional<InspectorRecord> r;
        CHECK_NOTHROW(r = parse_inspector_line(bad, why));
        CHECK_FALSE(r);
        CHECK_FALSE(why.empty());
    }
    // A rank beyond int's range is as unusable as a missing one (no silent truncation).
    std::string huge = line;
    huge.replace(huge.find("\"rank\":"), 7, "\"rank\":9223372036854775807,\"was_rank\":");
    CHECK_FALSE(parse_inspector_line(huge, why));
}
