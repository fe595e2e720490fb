// stallscope.timeline/2: read(write(snapshots)) == snapshots (to_json equality) for every fixture node and
// the scenario recordings, fields the writer has never heard of, torn tails, damaged frames, a reopened
// file, and the decompressed stream being plain JSON lines.
#include <dirent.h>
#include <doctest/doctest.h>
#include <unistd.h>
#include <zstd.h>
#include <algorithm>

#include <fstream>
#include <sstream>

#include "libstallscope/sources/sampler.h"
#include "libstallscope/timeline/binary_record.h"
#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/snapshot_diff.h"
#include "libstallscope/timeline/timeline.h"
#include "libstallscope/timeline/timeline_export.h"
#include "tests/unit/snapshot_fixture.h"
#include "tests/unit/timeline_v2_roundtrip.h"

using namespace stallscope;
using stallscope::test::write_then_read;

namespace {

std::string v2_temp_dir() {
    char tmpl[] = "/tmp/stallscope-tl2-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    return tmpl;
}

std::vector<std::string> entries(const std::string& dir, const std::string& suffix = "") {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name[0] != '.' && name.size() >= suffix.size() &&
                name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
                names.push_back(name);
        }
        ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    // Every caller loops over these: a moved or empty folder must fail, not check nothing.
    REQUIRE_MESSAGE(!names.empty(), "no '*", suffix, "' entries in ", dir);
    return names;
}

// A sequence that moves: counters up (and one reset), an interface that appears, warnings that appear
// and clear, a collector failure, a gauge that goes missing.
std::vector<Snapshot> moving(const Snapshot& base, int count) {
    std::vector<Snapshot> out;
    for (int i = 0; i < count; ++i) {
        Snapshot s = base;
        s.time = base.time + i;
        const auto step = static_cast<std::uint64_t>(i) * 1'000'003;
        for (auto& n : s.interfaces)
            if (n.rx_bytes) n.rx_bytes = *n.rx_bytes + step;
        for (auto& p : s.rdma) {
            for (auto& [name, value] : p.counters)
                if (value) value = *value + step * 3;
            // As the infiniband source derives them: the writer lists these derived from the data counters.
            if (const auto it = p.counters.find("port_rcv_data"); it != p.counters.end() && it->second)
                p.rx_bytes = *it->second * 4;
            if (i == 9) p.rx_bytes = 1;  // and once not: listed plain again
        }
        for (auto& g : s.gpus) {
            if (g.energy_mj) g.energy_mj = i == 5 ? 1 : *g.energy_mj + step;  // a counter reset
            g.utilization_pct = (i % 3 == 0) ? Gauge() : Gauge(50.0 + i * 0.25);
        }
        // The host's numbers, which the reader places without re-reading host_stats: up and down, a
        // gauge gone null and back, PSI gauges and totals.
        s.host_stats.mem_available_bytes = (i % 2 ? 8'000'000'000ULL : 9'000'000'000ULL) + step;
        s.host_stats.load1 = i == 4 ? Gauge() : Gauge(1.5 + i * 0.125);
        s.host_stats.procs_running = static_cast<std::uint64_t>(1 + i % 5);
        s.host_stats.psi.io_some_avg10 = 0.25 * i;
        s.host_stats.psi.memory_full_avg60 = i == 8 ? Gauge() : Gauge(0.5 * i);
        s.host_stats.psi.io_some_total_us = 1000 + step;
        if (i % 4 == 1) s.warnings.push_back("nvml: GPU 3 timed out");
        if (i == 7) s.collector_failures["nvml"] = "deadline 5 s exceeded";
        if (i >= 6) {
            NetInterface extra;
            extra.name = "ib/odd~name";  // needs JSON Pointer escaping
            extra.rx_bytes = static_cast<std::uint64_t>(i);
            s.interfaces.push_back(extra);
        }
        out.push_back(std::move(s));
    }
    return out;
}

void check_same(const std::vector<Snapshot>& read, const std::vector<Snapshot>& written, std::size_t count) {
    REQUIRE(read.size() == count);
    for (std::size_t i = 0; i < count; ++i) CHECK(to_json(read[i]).dump() == to_json(written[i]).dump());
}

Snapshot node_snapshot(const std::string& node) {
    Roots roots;
    roots.procfs = node + "/proc";
    roots.sysfs = node + "/sys";
    roots.ethtool = node + "/ethtool";
    roots.dev = "/nonexistent";
    roots.nvidia_smi = "/nonexistent/nvidia-smi";
    roots.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    return Sampler::for_node(roots).sample_at(1'790'000'000);
}

// The whole file through one zstd stream, as `zstdcat` gives it (REQUIREs that it decompresses).
std::string decompressed(const std::string& path) {
    const std::string compressed = test::file_bytes(path);
    ZSTD_DCtx* dctx = ZSTD_createDCtx();
    std::string text(1 << 16, '\0'), all;
    ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
    while (in.pos < in.size) {
        ZSTD_outBuffer out{text.data(), text.size(), 0};
        const std::size_t ret = ZSTD_decompressStream(dctx, &out, &in);
        if (ZSTD_isError(ret)) ZSTD_freeDCtx(dctx);
        REQUIRE_FALSE(ZSTD_isError(ret));
        all.append(text.data(), out.pos);
    }
    ZSTD_freeDCtx(dctx);
    return all;
}

// Parts unchanged, one element changed, counters added, arrays that grow and shrink, nccl and the job
// cgroup appearing and going: what the writer's per-part comparison and the reader's per-field re-reads
// must both follow.
std::vector<Snapshot> part_changes() {
    Snapshot s = test::full_snapshot();
    std::vector<Snapshot> samples;
    auto next = [&](auto change) {
        s.time += 1;
        change(s);
        samples.push_back(s);
    };
    next([](Snapshot&) {});
    next([](Snapshot& x) { *x.rdma[0].counters["port_rcv_data"] += 7; });
    next([](Snapshot& x) { x.rdma[0].hw_counters["rx_icrc_encapsulated"] = 3; });
    next([](Snapshot& x) { x.interfaces.push_back(x.interfaces[0]); });
    next([](Snapshot& x) {  // every moving number at once (the writer's leaf-by-leaf path)
        for (auto& n : x.interfaces) {
            for (Counter* c : {&n.rx_bytes, &n.rx_packets, &n.rx_multicast, &n.tx_bytes, &n.tx_colls})
                *c = c->value_or(0) + 11;
            for (auto& [name, value] : n.pause) value = value.value_or(0) + 1;
        }
        for (auto& p : x.rdma) {
            p.tx_bytes = 12;
            for (auto& [name, value] : p.hw_counters) value = std::nullopt;  // a number going null
        }
        for (auto& g : x.gpus) {
            g.utilization_pct = 12.5;
            g.power_w = std::nullopt;
            g.energy_mj = g.energy_mj.value_or(0) + 1000;
            g.ecc_corrected = 1;
        }
    });
    next([](Snapshot& x) {  // moving numbers and something else in the same element
        *x.rdma[0].counters["port_rcv_data"] += 1;
        x.rdma[0].state = "DOWN";
        x.gpus[0].temperature_c = 80;
        x.gpus[0].throttle_reasons.push_back("hw_slowdown");
    });
    next([](Snapshot& x) {  // a counter renamed while others move
        *x.rdma[0].counters["port_rcv_data"] += 1;
        x.rdma[0].counters.erase("symbol_error");
        x.rdma[0].counters["symbol_error_counter"] = 0;
    });
    next([](Snapshot& x) { x.interfaces[1].tx_bytes = 99; });
    next([](Snapshot& x) { x.gpus[0].power_w = -0.5; });
    next([](Snapshot& x) { x.nccl = {}; });
    next([](Snapshot& x) { x.job_cgroup.reset(); });
    next([](Snapshot& x) { x.nccl = test::full_snapshot().nccl; });
    next([](Snapshot& x) { x.gpus.clear(); });
    next([](Snapshot& x) {
        x.warnings.push_back("late");
        x.host = "renamed";
    });
    next([](Snapshot& x) {
        x.context.job_id = "43";
        x.host_stats.load1 = 2.0;
    });
    next([](Snapshot& x) { x.xid_events.push_back({79, "00000000:18:00.0", 3, "critical", "fell off"}); });
    next([](Snapshot& x) {
        x.collector_failures["nvml"] = "timeout";
        x.rdma.clear();
    });
    next([](Snapshot&) {});
    return samples;
}

}  // namespace

TEST_CASE("v2 round trip: every fixture node, with moving counters, reads back exactly") {
    const std::string nodes = std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes";
    const std::string dir = v2_temp_dir();
    for (const auto& node : entries(nodes)) {
        CAPTURE(node);
        const auto written = moving(node_snapshot(nodes + "/" + node), 12);
        const auto read = write_then_read(written, dir + "/timeline.0." + node + ".jsonl.zst");
        check_same(read, written, written.size());
    }
}

TEST_CASE("v2 round trip: the scenario recordings (GPUs, NCCL, Xids) read back exactly") {
    const std::string scenarios = std::string(STALLSCOPE_TESTS_DIR) + "/scenarios";
    const std::string dir = v2_temp_dir();
    for (const auto& name : entries(scenarios, ".jsonl")) {
        CAPTURE(name);
        TimelineContents v1;
        std::string error;
        REQUIRE(read_timeline(scenarios + "/" + name, v1, error));
        REQUIRE_FALSE(v1.samples.empty());
        const auto read = write_then_read(v1.samples, dir + "/" + name + ".zst");
        check_same(read, v1.samples, v1.samples.size());
    }
}

TEST_CASE("the writer's per-part records equal the whole-tree comparison's, part by part") {
    // append_record(snapshot) skips what compares equal, and must still write exactly what comparing
    // the whole to_json trees writes.
    test::records_by_part_checked(part_changes(), 7);  // a reset (new frame) in the middle
}

TEST_CASE("to_json's top-level keys are the parts the writer walks (else it compares whole trees)") {
    // A key added to to_json(snapshot) is still written (the writer then compares whole trees, slower);
    // teach SnapshotDiffEncoder::append_record(const Snapshot&) the new part and update this list.
    const Json empty = to_json(Snapshot{});
    std::vector<std::string> keys;
    for (const auto& [key, value] : empty.items()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"schema", "time", "unix_time", "host", "context", "host_stats",
                                           "interfaces", "rdma", "gpus", "xid_events", "collector_failures",
                                           "warnings"});
}

TEST_CASE("the reader's per-field re-reads follow every kind of part change exactly") {
    const std::string dir = v2_temp_dir();
    const auto written = part_changes();
    check_same(write_then_read(written, dir + "/t.jsonl.zst"), written, written.size());
    check_same(write_then_read(written, dir + "/frames.jsonl.zst", nullptr, 4), written, written.size());
}

TEST_CASE("a record that sets a wrong-typed value: every sample after it warns, as a whole read would") {
    const std::string dir = v2_temp_dir();
    Snapshot s = test::full_snapshot();
    std::string text = R"({"type":"header","schema":"stallscope.timeline/2"})"
                       "\n";
    text += R"({"type":"sample","full":)" + to_json(s).dump() + "}\n";
    text += R"({"type":"sample","set":{"/gpus/0/power_w":"hot"}})"
            "\n";  // read: power_w missing
    text += R"({"type":"sample","set":{"/unix_time":1795160402.5}})"
            "\n";
    text += R"({"type":"sample","set":{"/gpus/0/power_w":600.5}})"
            "\n";  // fixed again
    text += R"({"type":"sample","set":{"/unix_time":1795160403.5}})"
            "\n";
    std::ofstream(dir + "/t.jsonl") << text;
    TimelineContents c;
    std::string error;
    REQUIRE_MESSAGE(read_timeline(dir + "/t.jsonl", c, error), error);
    REQUIRE(c.samples.size() == 5);
    REQUIRE(c.warnings.size() == 2);  // samples 2 and 3 (the tree still holds the string in 3)
    CHECK(c.warnings[0].find("gpus[0].power_w") != std::string::npos);
    CHECK(c.warnings[1].find(":4: ") != std::string::npos);
    CHECK_FALSE(c.samples[1].gpus[0].power_w);
    CHECK_FALSE(c.samples[2].gpus[0].power_w);
    CHECK(c.samples[2].time == 1795160402.5);
    CHECK(c.samples[3].gpus[0].power_w == 600.5);
    CHECK(c.samples[4].time == 1795160403.5);
    s.time = 1795160403.5;
    s.gpus[0].power_w = 600.5;
    CHECK(to_json(c.samples[4]).dump() == to_json(s).dump());
}

TEST_CASE("after a damaged record no sample comes out, not even for a record that changes nothing") {
    // Found by the timeline fuzz target: a record with no changes after a damaged one handed out the
    // sample from before the damage (the whole read gave an empty one). One warning for the damage.
    const std::string dir = v2_temp_dir();
    Snapshot s = test::full_snapshot();
    std::string text = R"({"type":"header","schema":"stallscope.timeline/2"})"
                       "\n";
    text += R"({"type":"sample","full":)" + to_json(s).dump() + "}\n";
    text += R"({"type":"sample","add":{"/no/such/counter":5}})"
            "\n";  // damaged: nothing to add to
    text += R"({"type":"sample"})"
            "\n";  // changes nothing, but there is no sample to repeat
    text += R"({"type":"sample","set":{"/unix_time":1795160409.5}})"
            "\n";
    s.time = 1795160410.5;
    text += R"({"type":"sample","full":)" + to_json(s).dump() + "}\n";  // and back
    text += R"({"type":"sample"})"
            "\n";
    std::ofstream(dir + "/t.jsonl") << text;
    for (const bool whole : {false, true}) {
        CAPTURE(whole);
        struct Collect final : TimelineVisitor {
            std::vector<Snapshot> samples;
            void sample(Snapshot&& snapshot) override { samples.push_back(std::move(snapshot)); }
        } collect;
        TimelineReadLimits limits;
        limits.whole_samples = whole;
        std::vector<std::string> warnings;
        std::string error;
        REQUIRE_MESSAGE(visit_timeline(dir + "/t.jsonl", collect, warnings, error, limits), error);
        REQUIRE(collect.samples.size() == 3);
        CHECK(collect.samples[1].time == 1795160410.5);
        CHECK(to_json(collect.samples[2]).dump() == to_json(s).dump());
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].find(":3: ") != std::string::npos);
        CHECK(warnings[0].find("samples skipped until the next full sample") != std::string::npos);
    }
}

TEST_CASE("unchanged values cost nothing: a sample that only moved in time is its clock") {
    const Snapshot base = node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/roce");
    Snapshot next = base;
    next.time += 1;
    SnapshotDiffEncoder encoder;
    std::string first, second;
    encoder.append_record(to_json(base), first);
    encoder.append_record(to_json(next), second);
    const Json record = Json::parse(second);
    CHECK_FALSE(record.contains("add"));
    CHECK_FALSE(record.contains("a"));
    CHECK_FALSE(record.contains("set"));                    // the text clock is derived from the number
    CHECK(record["gkeys"] == Json::array({"/unix_time"}));  // the number: a gauge, listed
    CHECK(record["g"] == Json::array({base.time + 1}));
    CHECK(first.size() > 20 * second.size());
}

TEST_CASE(
    "the decompressed stream is JSON lines and binary records (what zstdcat | grep -a '^{' | jq sees)") {
    const std::string dir = v2_temp_dir();
    // The clock and the counters move, nothing else: after a frame's full sample, its first change record
    // lists them (JSON), the next is binary.
    const Snapshot base = node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/vm");
    std::vector<Snapshot> written(8, base);
    for (std::size_t i = 0; i < written.size(); ++i) {
        written[i].time = base.time + static_cast<double>(i);
        for (auto& n : written[i].interfaces)
            if (n.rx_bytes) n.rx_bytes = *n.rx_bytes + i * 1000;
    }
    write_then_read(written, dir + "/t.jsonl.zst", nullptr, 3);  // several frames: zstdcat concatenates
    std::istringstream lines(decompressed(dir + "/t.jsonl.zst"));
    int samples = 0, full = 0, binary = 0;
    PlainRecord record;
    for (std::string line; std::getline(lines, line);) {
        if (line.front() == kBinaryRecordMarker) {
            REQUIRE(read_binary_record(line, record));
            ++binary;
            continue;
        }
        const Json j = Json::parse(line);  // throws on anything but JSON
        samples += j["type"] == "sample";
        full += j.contains("full");
    }
    CHECK(samples + binary == 8);
    CHECK(full == 3);    // frames of 3: samples 1, 4, 7 are full
    CHECK(binary == 2);  // frames [full, JSON, binary] [full, JSON, binary] [full, JSON]
}

TEST_CASE("a days-long step sampled every 30 s starts a new frame every hour, not every 3 600 samples") {
    const std::string dir = v2_temp_dir();
    auto written = moving(node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/vm"), 250);
    const double start = written.front().time;
    // 30 s apart; at sample 200 the clock steps back an hour, then goes on 30 s apart.
    for (std::size_t i = 0; i < written.size(); ++i)
        written[i].time = start + 30.0 * static_cast<double>(i) - (i >= 200 ? 3630.0 : 0.0);
    const auto read = write_then_read(written, dir + "/t.jsonl.zst");
    check_same(read, written, written.size());
    // Which samples open a frame (a full sample): the first, then the first after each hour of samples.
    std::istringstream lines(decompressed(dir + "/t.jsonl.zst"));
    std::vector<int> full;
    int sample = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.front() == kBinaryRecordMarker) {  // a change record, never a full sample
            ++sample;
            continue;
        }
        const Json j = Json::parse(line);
        if (j["type"] != "sample") continue;
        if (j.contains("full")) full.push_back(sample);
        ++sample;
    }
    // Sample 120 is 3 600 s after sample 0 and ends the first frame. The second (from 121) has covered
    // 2 340 s at 199; the step back adds nothing, each sample after it 30 s: 3 600 s at 242. A frame timed
    // from its first sample's clock would run on past 249.
    CHECK(full == std::vector<int>{0, 121, 243});
}

TEST_CASE("a killed helper: every cut of the file reads the samples before the cut, exactly") {
    const std::string dir = v2_temp_dir();
    const auto written = moving(node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/roce"), 10);
    write_then_read(written, dir + "/whole.jsonl.zst");
    const std::string bytes = test::file_bytes(dir + "/whole.jsonl.zst");
    std::size_t previous = 0;
    for (std::size_t cut = bytes.size() / 2; cut <= bytes.size(); cut += 7) {
        const std::string path = dir + "/cut.jsonl.zst";
        std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, cut);
        TimelineContents c;
        std::string error;
        REQUIRE_MESSAGE(read_timeline(path, c, error), error);
        CHECK(c.samples.size() >= previous);
        previous = c.samples.size();
        check_same(c.samples, written, c.samples.size());
        CHECK(c.warnings.size() <= 2);
    }
    CHECK(previous == written.size());
}

TEST_CASE("a damaged frame is skipped to the next one; the samples there are exact") {
    const std::string dir = v2_temp_dir();
    const auto written = moving(node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/roce"), 12);
    write_then_read(written, dir + "/t.jsonl.zst", nullptr, 4);
    std::string bytes = test::file_bytes(dir + "/t.jsonl.zst");
    // Damage the first frame's compressed data (past its header and the header line).
    for (std::size_t i = bytes.size() / 6; i < bytes.size() / 6 + 16; ++i) bytes[i] ^= 0x5a;
    const std::string path = dir + "/damaged.jsonl.zst";
    std::ofstream(path, std::ios::binary) << bytes;
    TimelineContents c;
    std::string error;
    REQUIRE_MESSAGE(read_timeline(path, c, error), error);
    REQUIRE_FALSE(c.warnings.empty());
    // Where the damage lands decides whether the block's own decoding fails or only the frame's checksum
    // (after garbage lines, skipped as not JSON): either way a warning names it.
    CHECK(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& w) {
        return w.find("damaged compressed data") != std::string::npos;
    }));
    // The last two frames are whole.
    REQUIRE(c.samples.size() >= 8);
    const std::vector<Snapshot> tail(c.samples.end() - 8, c.samples.end());
    const std::vector<Snapshot> expected(written.end() - 8, written.end());
    check_same(tail, expected, 8);
}

TEST_CASE(
    "a reopened v2 file (the helper moved to the fallback directory) restarts with header and full sample") {
    const std::string dir = v2_temp_dir();
    const auto written = moving(node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/vm"), 6);
    TimelineWriter w(TimelineFormat::zstd_v2);
    std::string error;
    REQUIRE(w.open(dir + "/a.jsonl.zst", error));
    REQUIRE(w.write_header(timeline_header(written.front(), 1.0, {}), error));
    for (int i = 0; i < 3; ++i)
        REQUIRE(w.append_sample(written[static_cast<std::size_t>(i)], Profile{}, error));
    // What relocate_timeline does: copy what is there (here cut short, as a full disk leaves it), reopen.
    const std::string bytes = test::file_bytes(dir + "/a.jsonl.zst");
    std::ofstream(dir + "/b.jsonl.zst", std::ios::binary) << bytes.substr(0, bytes.size() - 5);
    REQUIRE(w.open(dir + "/b.jsonl.zst", error));
    for (int i = 3; i < 6; ++i)
        REQUIRE(w.append_sample(written[static_cast<std::size_t>(i)], Profile{}, error));
    w.close();
    TimelineContents c;
    REQUIRE_MESSAGE(read_timeline(dir + "/b.jsonl.zst", c, error), error);
    CHECK(c.header["schema"] == kTimelineSchemaV3);
    REQUIRE(c.samples.size() >= 5);  // the last sample before the cut is lost
    const std::vector<Snapshot> after(c.samples.end() - 3, c.samples.end());
    const std::vector<Snapshot> expected(written.begin() + 3, written.end());
    check_same(after, expected, 3);
}

// `stallscope export` of `path` into `to`, and its lines (the export succeeds without warnings).
static std::vector<std::string> exported_lines(const std::string& path, const std::string& to) {
    std::FILE* out = std::fopen(to.c_str(), "w");
    REQUIRE(out != nullptr);
    std::vector<std::string> warnings;
    std::string error;
    REQUIRE_MESSAGE(export_timeline(path, out, warnings, error), error);
    std::fclose(out);
    CHECK(warnings.empty());
    std::ifstream in(to);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST_CASE("export gives v1 lines, every sample whole, that read back to the same samples") {
    const std::string dir = v2_temp_dir();
    const auto written = moving(node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/roce"), 7);
    write_then_read(written, dir + "/t.jsonl.zst", nullptr, 3);
    int samples = 0;
    for (const std::string& line : exported_lines(dir + "/t.jsonl.zst", dir + "/exported.jsonl")) {
        const Json j = Json::parse(line);
        if (j["type"] == "sample") {
            ++samples;
            CHECK(j["schema"] == kSnapshotSchema);
        } else {
            CHECK(j["schema"] == kTimelineSchema);
        }
    }
    CHECK(samples == 7);
    TimelineContents c;
    std::string error;
    REQUIRE(read_timeline(dir + "/exported.jsonl", c, error));
    check_same(c.samples, written, written.size());
}

TEST_CASE("export writes each sample line as the tree's dump() would, UTF-8 text included") {
    const std::string dir = v2_temp_dir();
    auto written = moving(node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/roce"), 6);
    written[2].warnings.push_back("GPU 3: température élevée");  // UTF-8, written as is
    written[3].warnings.push_back("bad byte \xff");  // the timeline holds U+FFFD (dump()'s replace)
    const auto read = write_then_read(written, dir + "/t.jsonl.zst");
    std::size_t samples = 0;
    for (const std::string& line : exported_lines(dir + "/t.jsonl.zst", dir + "/exported.jsonl")) {
        if (line.rfind(R"({"type":"sample")", 0) != 0) continue;
        REQUIRE(samples < read.size());
        Json tree = {{"type", "sample"}};
        const Json fields = to_json(read[samples]);  // not to_json(...).items(): a temporary's dangle
        for (auto& [key, value] : fields.items()) tree[key] = value;
        CAPTURE(samples);
        CHECK(line == tree.dump(-1, ' ', false, Json::error_handler_t::replace));
        ++samples;
    }
    CHECK(samples == written.size());
}

TEST_CASE("an unfinished frame followed by a new one (helper killed, then restarted): nothing is lost") {
    const std::string dir = v2_temp_dir();
    const auto written = moving(node_snapshot(std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/roce"), 10);
    const std::string path = dir + "/t.jsonl.zst";
    std::string error;
    {
        // The first helper flushed 6 samples and was killed: its frame has no end.
        TimelineWriter first(TimelineFormat::zstd_v2);
        REQUIRE(first.open(dir + "/first.jsonl.zst", error));
        REQUIRE(first.write_header(timeline_header(written.front(), 1.0, {}), error));
        for (int i = 0; i < 6; ++i) REQUIRE(first.append_sample(written[i], Profile{}, error));
        std::ofstream(path, std::ios::binary) << test::file_bytes(dir + "/first.jsonl.zst");
    }
    {
        TimelineWriter second(TimelineFormat::zstd_v2);  // appends a new frame: header, full sample
        REQUIRE(second.open(path, error));
        REQUIRE(second.write_header(timeline_header(written.front(), 1.0, {}), error));
        for (int i = 6; i < 10; ++i) REQUIRE(second.append_sample(written[i], Profile{}, error));
    }
    TimelineContents c;
    REQUIRE_MESSAGE(read_timeline(path, c, error), error);
    check_same(c.samples, written, written.size());  // the first frame's last sample too
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0].find("a frame ends unfinished where the next one starts") != std::string::npos);
}
