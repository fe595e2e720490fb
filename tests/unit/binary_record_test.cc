// The binary change record (binary_record.h): numbers back as written, never a '\n' byte, anything not
// exactly a record refused, the writer's binary record the same numbers as its JSON plain record, and the
// reader treating a damaged binary record as it treats a damaged JSON one.
#include "libstallscope/timeline/binary_record.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/snapshot_diff.h"
#include "libstallscope/timeline/timeline.h"
#include "tests/unit/snapshot_fixture.h"
#include "tests/unit/timeline_v2_roundtrip.h"

using namespace stallscope;

namespace {

bool same_bits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// A record of these numbers, as the encoder lays it out.
std::string record(const std::vector<std::int64_t>* a, const std::vector<double>* g) {
    std::string out(1, kBinaryRecordMarker);
    append_record_varint(out, (a ? kBinaryRecordHasA : 0) | (g ? kBinaryRecordHasG : 0));
    if (a) {
        append_record_varint(out, a->size());
        for (const auto d : *a) append_record_delta(out, d);
    }
    if (g) {
        append_record_varint(out, g->size());
        for (const auto v : *g) append_record_gauge(out, v);
    }
    return out;
}

std::vector<double> edge_gauges() {
    return {0.0,
            -0.0,
            612.25,
            612.345,
            0.1,
            -1.5,
            1795160401.123456789,
            0.0001,
            1e-5,
            123456789012345.67,
            9007199254740992.0,  // 2^53
            9007199254740994.0,
            30.213299999999997,  // 17 significant digits
            -0.30000000000000004,
            1e15,
            1e22,
            1e23,
            1e300,
            -1e-300,
            5e-324,
            DBL_MIN,
            DBL_MAX,
            -DBL_MAX,
            std::nextafter(1.0, 2.0),
            std::nextafter(0.1, 0.0)};
}

// `written` through the writer and the reader (a temporary file): no warning, every sample exactly.
void reads_back_exactly(const std::vector<Snapshot>& written) {
    char tmpl[] = "/tmp/stallscope-binrec-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string path = std::string(tmpl) + "/t.jsonl.zst";
    std::vector<std::string> warnings;
    const auto read = test::write_then_read(written, path, &warnings);
    CHECK(warnings.empty());
    REQUIRE(read.size() == written.size());
    for (std::size_t i = 0; i < written.size(); ++i) {
        CAPTURE(i);
        CHECK(to_json(read[i]).dump() == to_json(written[i]).dump());
    }
    ::unlink(path.c_str());
    ::rmdir(tmpl);
}

}  // namespace

TEST_CASE("varints: every value back, and never a '\\n' byte") {
    std::vector<std::uint64_t> values;
    for (std::uint64_t v = 0; v < 70000; ++v) values.push_back(v);
    for (int bit = 0; bit < 64; ++bit)
        for (std::int64_t d = -130; d <= 130; ++d) values.push_back((std::uint64_t{1} << bit) + d);
    values.push_back(UINT64_MAX);
    std::mt19937_64 draw(20261127);
    for (int i = 0; i < 100000; ++i) values.push_back(draw() >> (draw() % 64));
    for (const auto v : values) {
        CAPTURE(v);
        // A number on its own is read through a record: "a" holding it as a delta's zigzag.
        std::string bytes(1, kBinaryRecordMarker);
        append_record_varint(bytes, kBinaryRecordHasA);
        append_record_varint(bytes, 1);
        append_record_varint(bytes, v);
        CHECK(bytes.find('\n') == std::string::npos);
        CHECK(bytes.size() <= 1 + 1 + 1 + 10);
        PlainRecord out;
        REQUIRE(read_binary_record(bytes, out));
        REQUIRE(out.a.size() == 1);
        // zigzag: even values are non-negative deltas, odd ones negative
        const std::int64_t expected = static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
        CHECK(out.a[0] == expected);
        // The same number with others after it (a record's numbers are read where they end).
        std::string followed(1, kBinaryRecordMarker);
        append_record_varint(followed, kBinaryRecordHasA);
        append_record_varint(followed, 2);
        append_record_varint(followed, v);
        append_record_varint(followed, UINT64_MAX - 1);  // 10 bytes
        REQUIRE(read_binary_record(followed, out));
        REQUIRE(out.a.size() == 2);
        CHECK(out.a[0] == expected);
        CHECK(out.a[1] == std::numeric_limits<std::int64_t>::max());
    }
}

TEST_CASE("deltas and gauges come back bit for bit; everyday gauges as short decimals") {
    std::vector<std::int64_t> a = {0,       1,        -1,        63,        -64,
                                   1000003, -1000003, INT64_MAX, INT64_MIN, 12'000'000'000};
    std::vector<double> g = edge_gauges();
    std::mt19937_64 draw(7);
    for (int i = 0; i < 20000; ++i) {
        std::uint64_t bits = draw();
        double v = 0;
        std::memcpy(&v, &bits, sizeof v);
        if (std::isfinite(v)) g.push_back(v);
        g.push_back(static_cast<double>(draw() % 100000) / 100.0);             // a power reading: 612.25
        g.push_back(1.79e9 + static_cast<double>(draw() % 1000000) / 1000.0);  // a clock
        a.push_back(static_cast<std::int64_t>(draw()));
    }
    const std::string bytes = record(&a, &g);
    CHECK(bytes.find('\n') == std::string::npos);
    PlainRecord out;
    REQUIRE(read_binary_record(bytes, out));
    CHECK(out.has_a);
    CHECK(out.has_g);
    CHECK(out.a == a);
    REQUIRE(out.g.size() == g.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
        CAPTURE(g[i]);
        CHECK(same_bits(out.g[i], g[i]));
    }
    for (const double everyday : {612.25, 97.0, 71.5, 1795160401.123, 30.213299999999997}) {
        std::string one;
        append_record_gauge(one, everyday);
        CAPTURE(everyday);
        CHECK(one.size() <= 10);  // a tag byte and the mantissa's varint, not 64 raw bits (11 bytes)
    }
}

TEST_CASE("a record with neither list, and one with only gauges") {
    PlainRecord out;
    REQUIRE(read_binary_record(record(nullptr, nullptr), out));
    CHECK_FALSE(out.has_a);
    CHECK_FALSE(out.has_g);
    const std::vector<double> g = {1.5};
    REQUIRE(read_binary_record(record(nullptr, &g), out));
    CHECK_FALSE(out.has_a);
    CHECK(out.g == g);
    const std::vector<std::int64_t> none;
    REQUIRE(read_binary_record(record(&none, nullptr), out));
    CHECK(out.has_a);
    CHECK(out.a.empty());
}

TEST_CASE("anything not exactly a record is refused: every cut, extra bytes, unknown flags, bad numbers") {
    const std::vector<std::int64_t> a = {5, -7, 1'000'000'007};
    const std::vector<double> g = {612.25, -0.0, 1e300};
    const std::string good = record(&a, &g);
    PlainRecord out;
    REQUIRE(read_binary_record(good, out));
    for (std::size_t cut = 0; cut < good.size(); ++cut) {
        CAPTURE(cut);
        CHECK_FALSE(read_binary_record(std::string_view(good).substr(0, cut), out));  // a torn record
    }
    CHECK_FALSE(read_binary_record(good + '\x01', out));         // trailing bytes
    CHECK_FALSE(read_binary_record("{" + good.substr(1), out));  // not the marker
    std::string flags(1, kBinaryRecordMarker);
    append_record_varint(flags, 4);  // a flag this version does not know
    CHECK_FALSE(read_binary_record(flags, out));

    const auto gauge_record = [](std::uint64_t tag, std::uint64_t value) {
        std::string r(1, kBinaryRecordMarker);
        append_record_varint(r, kBinaryRecordHasG);
        append_record_varint(r, 1);
        append_record_varint(r, tag);
        append_record_varint(r, value);
        return r;
    };
    CHECK(read_binary_record(gauge_record(2, 61225 * 2), out));
    CHECK(out.g == std::vector<double>{612.25});
    CHECK_FALSE(read_binary_record(gauge_record(24, 2), out));                // no such tag
    CHECK(read_binary_record(gauge_record(15, 30213299999999997 * 2), out));  // 17 digits: past 2^53
    CHECK(out.g == std::vector<double>{30.213299999999997});
    CHECK_FALSE(read_binary_record(gauge_record(0, 2'000'000'000'000'000'000), out));  // 10^18: never written
    std::uint64_t bits = 0;
    const double inf = std::numeric_limits<double>::infinity(),
                 nan = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(&bits, &inf, sizeof bits);
    CHECK_FALSE(read_binary_record(gauge_record(23, bits), out));  // "g" holds numbers only, as in JSON
    std::memcpy(&bits, &nan, sizeof bits);
    CHECK_FALSE(read_binary_record(gauge_record(23, bits), out));

    std::string huge(1, kBinaryRecordMarker);  // a count far past the bytes left: refused, nothing reserved
    append_record_varint(huge, kBinaryRecordHasA);
    append_record_varint(huge, UINT64_MAX);
    CHECK_FALSE(read_binary_record(huge, out));
    std::string overflow(1, kBinaryRecordMarker);  // a varint past 64 bits
    append_record_varint(overflow, kBinaryRecordHasA);
    append_record_varint(overflow, 1);
    const std::string nine_groups = overflow + std::string(9, '\xff') + '\x01';  // (2^63 - 1) x 127: over
    overflow += std::string(10, '\xff') + '\x01';
    CHECK_FALSE(read_binary_record(overflow, out));
    CHECK_FALSE(read_binary_record(nine_groups, out));
    std::string newline = good;  // a '\n' where a varint's last byte would be (the input splits there)
    newline[1] = '\n';
    CHECK_FALSE(read_binary_record(newline, out));
}

TEST_CASE("the writer's binary record holds the numbers of its JSON plain record") {
    Snapshot s = test::full_snapshot();
    SnapshotDiffEncoder text, binary;
    binary.set_binary_records(true);
    int binaries = 0;
    for (int i = 0; i < 12; ++i) {
        CAPTURE(i);
        s.time += 1.25;
        s.gpus[0].energy_mj = *s.gpus[0].energy_mj + 1000 * i;
        s.gpus[0].power_w = 600.0 + i * 0.375;
        s.gpus[0].ecc_corrected = i < 6 ? 4 : 3;  // a counter that goes down: a negative delta
        if (i == 8) s.gpus[0].temperature_c = -0.0;
        std::string t, b;
        text.append_record(s, t);
        binary.append_record(s, b);
        if (b.front() != kBinaryRecordMarker) {
            CHECK(b == t);  // a list changed, or something was set: JSON, the same text
            continue;
        }
        ++binaries;
        const Json j = Json::parse(t);
        CHECK(j.size() <= 3);  // "type", "a", "g" and nothing else
        PlainRecord r;
        REQUIRE(read_binary_record(b, r));
        CHECK(r.has_a == j.contains("a"));
        CHECK(r.has_g == j.contains("g"));
        if (r.has_a) CHECK(r.a == j["a"].get<std::vector<std::int64_t>>());
        if (r.has_g) {
            const auto g = j["g"].get<std::vector<double>>();
            REQUIRE(r.g.size() == g.size());
            for (std::size_t k = 0; k < g.size(); ++k) CHECK(same_bits(r.g[k], g[k]));
        }
        CHECK(b.size() < t.size());
    }
    CHECK(binaries >= 8);
}

TEST_CASE("a damaged binary record: one warning, samples skipped until the next full sample") {
    char tmpl[] = "/tmp/stallscope-binrec-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string path = std::string(tmpl) + "/t.jsonl";
    Snapshot s = test::full_snapshot();
    const double t0 = s.time;
    std::string text = R"({"type":"header","schema":"stallscope.timeline/3"})"
                       "\n";
    text += R"({"type":"sample","full":)" + to_json(s).dump() + "}\n";
    text += R"({"type":"sample","keys":["/gpus/0/energy_mj"],"a":[5],"gkeys":["/unix_time"],"g":[)" +
            std::to_string(t0 + 1) + "]}\n";
    const std::vector<std::int64_t> a = {7};
    std::vector<double> g = {t0 + 2};
    text += record(&a, &g) + "\n";
    text += std::string(1, kBinaryRecordMarker) + "\x04\n";  // unknown flags: damaged
    g = {t0 + 4};
    text += record(&a, &g) + "\n";  // no tree to apply it to: skipped, no second warning
    s.time = t0 + 5;
    text += R"({"type":"sample","full":)" + to_json(s).dump() + "}\n";
    const std::vector<std::int64_t> wrong_count = {1, 2};
    text += record(&wrong_count, nullptr) + "\n";  // "a" does not match "keys" (none in this frame)
    std::string torn = record(&a, &g);
    text += torn.substr(0, torn.size() - 1);  // the helper killed mid-write
    std::ofstream(path, std::ios::binary) << text;

    TimelineContents c;
    std::string error;
    REQUIRE_MESSAGE(read_timeline(path, c, error), error);
    REQUIRE(c.samples.size() == 4);  // full, JSON record, binary record, full
    CHECK(*c.samples[1].gpus[0].energy_mj == 123456 + 5);
    CHECK(*c.samples[2].gpus[0].energy_mj == 123456 + 5 + 7);
    CHECK(c.samples[2].time == t0 + 2);
    CHECK(c.samples[3].time == t0 + 5);
    REQUIRE(c.warnings.size() == 3);
    CHECK(c.warnings[0].find(":5: a binary change record that does not read") != std::string::npos);
    CHECK(c.warnings[1].find(":8: \"a\" does not match \"keys\"") != std::string::npos);
    CHECK(c.warnings[2].find(":9: torn last line skipped") != std::string::npos);
    ::unlink(path.c_str());
    ::rmdir(tmpl);
}

TEST_CASE("a stallscope.timeline/2 file (JSON records, as written before) reads as its /3 twin does") {
    char tmpl[] = "/tmp/stallscope-binrec-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    Snapshot s = test::full_snapshot();
    std::vector<Snapshot> written;
    for (int i = 0; i < 40; ++i) {
        s.time += 1;
        s.gpus[0].energy_mj = *s.gpus[0].energy_mj + 7000 + 13 * i;
        s.gpus[0].power_w = 600 + 0.125 * (i % 9);
        if (i == 20) s.warnings.push_back("nvml: GPU 3 timed out");  // a "set": JSON in both
        written.push_back(s);
    }
    TimelineContents read[2];
    for (const bool v2 : {true, false}) {
        const std::string path = dir + (v2 ? "/v2.jsonl.zst" : "/v3.jsonl.zst");
        {
            TimelineWriter w(TimelineFormat::zstd_v2);
            if (v2) w.write_v2_text_records();
            w.set_samples_per_frame(16);
            std::string error;
            REQUIRE(w.open(path, error));
            REQUIRE(w.write_header(timeline_header(written.front(), 1.0, {}), error));
            for (const auto& one : written) REQUIRE(w.append_sample(one, Profile{}, error));
        }
        std::string error;
        REQUIRE_MESSAGE(read_timeline(path, read[v2], error), error);
        CHECK(read[v2].header["schema"] == (v2 ? kTimelineSchemaV2 : kTimelineSchemaV3));
        CHECK(read[v2].warnings.empty());
        ::unlink(path.c_str());
    }
    ::rmdir(tmpl);
    REQUIRE(read[0].samples.size() == written.size());
    REQUIRE(read[1].samples.size() == written.size());
    for (std::size_t i = 0; i < written.size(); ++i) {
        CAPTURE(i);
        CHECK(to_json(read[0].samples[i]).dump() == to_json(written[i]).dump());
        CHECK(to_json(read[1].samples[i]).dump() == to_json(written[i]).dump());
    }
}

TEST_CASE("a v2 timeline recorded by an earlier stallscope (the fuzz corpus' roce recording) still reads") {
    TimelineContents c;
    std::string error;
    const std::string path =
        std::string(STALLSCOPE_FIXTURES_DIR) + "/../tests/fuzz/corpus/timeline/recorded_roce_v2.jsonl.zst";
    REQUIRE_MESSAGE(read_timeline(path, c, error), error);
    CHECK(c.header["schema"] == kTimelineSchemaV2);
    CHECK(c.samples.size() == 5);  // its five sample lines
    CHECK(c.warnings.empty());
    CHECK_FALSE(c.recorded_verdict.is_null());
}

TEST_CASE("counters added to the kept sample alone are in the tree when an element is re-read from it") {
    // The reader adds a placed counter to its kept sample only, leaving the decoder's tree behind until
    // something reads the tree. Here a port's rate (a gauge the reader cannot place) changes every few
    // records, so the port is re-read from the tree between records that only move its counters.
    Snapshot s = test::full_snapshot();
    REQUIRE_FALSE(s.rdma.empty());
    REQUIRE_FALSE(s.rdma[0].counters.empty());
    std::vector<Snapshot> written;
    for (int i = 0; i < 30; ++i) {
        s.time += 1;
        for (auto& [name, value] : s.rdma[0].counters)
            if (value) value = *value + 1000 + static_cast<std::uint64_t>(i);
        if (i % 4 == 3) s.rdma[0].rate_gbps = 100.0 + i;
        written.push_back(s);
    }
    reads_back_exactly(written);
}

TEST_CASE(
    "a frame cut part-way through a block, then a new one: the new frame's bytes are not the old one's") {
    // A write cut short (a crash, a full disk) leaves half a block; a restarted helper appends a frame
    // after it. The decoder wants the rest of the block and would take the new frame's first bytes for
    // it: a raw block (zstd writes small flushes so) takes them without an error. Here decoding on
    // failed a few bytes later and the reader recovered with a "damaged" warning; on the disk-full test
    // (tests/cli/record_test.cc, before the writer took back torn writes) it went on for the whole new
    // frame, 32 samples too many. The new frame is now recognised where it starts.
    char tmpl[] = "/tmp/stallscope-binrec-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    Snapshot base = test::full_snapshot();
    for (auto& n : base.interfaces) n.rx_bytes = n.tx_bytes = n.rx_packets = n.tx_packets = 1000;
    std::vector<Snapshot> written(10, base);
    std::mt19937_64 draw(5);
    for (std::size_t i = 0; i < written.size(); ++i) {
        written[i].time = base.time + static_cast<double>(i);
        for (auto& n : written[i].interfaces)
            if (n.rx_bytes) n.rx_bytes = *n.rx_bytes + i * 1'000'003;
        // Sample 5, the one cut, moves by random amounts: bytes zstd cannot compress, a raw block.
        if (i == 5)
            for (auto& n : written[i].interfaces)
                for (Counter* c : {&n.rx_bytes, &n.tx_bytes, &n.rx_packets, &n.tx_packets})
                    if (*c) *c = **c + draw() % (std::uint64_t{1} << 40);
    }
    const std::string path = dir + "/t.jsonl.zst";
    std::string error;
    std::size_t before_last = 0;
    {
        TimelineWriter first(TimelineFormat::zstd_v2);
        REQUIRE(first.open(dir + "/first.jsonl.zst", error));
        REQUIRE(first.write_header(timeline_header(written.front(), 1.0, {}), error));
        for (std::size_t i = 0; i < 6; ++i) {
            if (i == 5) before_last = test::file_bytes(dir + "/first.jsonl.zst").size();
            REQUIRE(first.append_sample(written[i], Profile{}, error));
        }
        const std::string bytes = test::file_bytes(dir + "/first.jsonl.zst");
        REQUIRE(bytes.size() > before_last + 2);
        std::ofstream(path, std::ios::binary)
            << bytes.substr(0, before_last + (bytes.size() - before_last) / 2);
    }
    {
        TimelineWriter second(TimelineFormat::zstd_v2);
        REQUIRE(second.open(path, error));
        REQUIRE(second.write_header(timeline_header(written.front(), 1.0, {}), error));
        for (std::size_t i = 6; i < 10; ++i) REQUIRE(second.append_sample(written[i], Profile{}, error));
    }
    TimelineContents c;
    REQUIRE_MESSAGE(read_timeline(path, c, error), error);
    std::vector<Snapshot> expected(written.begin(), written.begin() + 5);  // sample 5's block was cut
    expected.insert(expected.end(), written.begin() + 6, written.end());
    REQUIRE(c.samples.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CAPTURE(i);
        CHECK(to_json(c.samples[i]).dump() == to_json(expected[i]).dump());
    }
    CAPTURE(c.warnings);
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0].find("a frame ends part-way through a block where the next one starts") !=
          std::string::npos);
    for (const char* name : {"/first.jsonl.zst", "/t.jsonl.zst"}) ::unlink((dir + name).c_str());
    ::rmdir(tmpl);
}

TEST_CASE("gauges and the time set in the kept sample alone are in the tree when it is read again") {
    // As counters: a GPU's and the host's gauges and the time, moving every record, are set in the
    // reader's kept sample only. Every 4th record a gauge the reader cannot place (GPM SM activity)
    // re-reads the GPU from the tree; every 7th a JSON record (throttle reasons, a "set") changes the
    // tree itself. Both must find every gauge current.
    Snapshot s = test::full_snapshot();
    REQUIRE_FALSE(s.gpus.empty());
    s.gpus[0].gpm = GpmMetrics{};
    s.gpus[0].gpm->sm_active_pct = 50;
    std::vector<Snapshot> written;
    for (int i = 0; i < 40; ++i) {
        s.time += 1.25;
        Gpu& g = s.gpus[0];
        g.power_w = 300.5 + i;
        g.temperature_c = 60.25 + i % 5;
        s.host_stats.load1 = 1.5 + i * 0.125;
        s.host_stats.psi.memory_full_avg10 = 0.25 * i;
        if (i % 4 == 3) g.gpm->sm_active_pct = 50.5 + i;
        if (i % 7 == 6) g.throttle_reasons = {i % 2 ? "sw_power_cap" : "hw_slowdown"};
        written.push_back(s);
    }
    reads_back_exactly(written);
}
