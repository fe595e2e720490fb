// The v2 record's kept lists (snapshot_diff.h): "keys"/"a" with derived entries, "gkeys"/"g", how they
// hold within a frame and when they are rewritten, checked record by record with a reader written from
// the format's text; and the same records through the real reader (visit_timeline).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/snapshot_diff.h"
#include "libstallscope/timeline/timeline.h"
#include "tests/unit/snapshot_fixture.h"
#include "tests/unit/timeline_v2_roundtrip.h"

using namespace stallscope;
using stallscope::test::write_then_read;

namespace {

// A reader of change records as snapshot_diff.h describes them, on a SnapshotDiffDecoder.
struct RecordReader {
    SnapshotDiffDecoder decoder;
    Json keys = Json::array(), gkeys = Json::array();

    void apply(const Json& r) {
        std::string problem;
        if (r.contains("full")) {
            decoder.keyframe(Json(r["full"]));
            keys = gkeys = Json::array();
            return;
        }
        if (r.contains("keys")) keys = r["keys"];
        if (r.contains("gkeys")) gkeys = r["gkeys"];
        if (r.contains("a")) {
            std::map<std::string, std::int64_t> plain;
            std::size_t at = 0;
            for (const auto& k : keys) {
                if (k.is_array()) continue;
                REQUIRE(at < r["a"].size());
                const auto delta = r["a"][at++].get<std::int64_t>();
                plain[k.get<std::string>()] = delta;
                if (delta) REQUIRE_MESSAGE(decoder.add(k.get<std::string>(), delta, problem), problem);
            }
            REQUIRE(at == r["a"].size());
            for (const auto& k : keys) {
                if (!k.is_array()) continue;
                REQUIRE(plain.count(k[2].get<std::string>()) == 1);
                const std::uint64_t delta =
                    k[1].get<std::uint64_t>() * static_cast<std::uint64_t>(plain[k[2].get<std::string>()]);
                if (delta)
                    REQUIRE_MESSAGE(
                        decoder.add(k[0].get<std::string>(), static_cast<std::int64_t>(delta), problem),
                        problem);
            }
        }
        if (r.contains("g")) {
            REQUIRE(r["g"].size() == gkeys.size());
            for (std::size_t i = 0; i < gkeys.size(); ++i) {
                bool changed = false;
                REQUIRE_MESSAGE(decoder.set_number(gkeys[i].get<std::string>(), r["g"][i].get<double>(),
                                                   changed, problem),
                                problem);
            }
        }
        if (r.contains("set"))  // not r.value(...).items(): items() of a temporary dangles
            for (auto& [k, v] : r["set"].items()) REQUIRE_MESSAGE(decoder.set(k, Json(v), problem), problem);
        decoder.end_record();
    }
};

struct Stepper {
    SnapshotDiffEncoder encoder;
    RecordReader reader;
    Json step(const Json& next) {
        std::string text;
        encoder.append_record(Json(next), text);
        const Json r = Json::parse(text);
        reader.apply(r);
        CHECK(reader.decoder.tree().dump() == next.dump());
        return r;
    }
};

}  // namespace

TEST_CASE("a field the encoder has never seen flows through (what gpudepth adds to to_json)") {
    Json a = to_json(Snapshot{});
    a["gpm"] = Json{{"sm_occupancy_pct", 41.5}, {"nvlink", Json::array({1u, 2u, 3u})}};
    a["cgroup"] = Json{{"cpu_usage_usec", 1000u}, {"oom_kills", 0u}};
    Json b = a;
    b["cgroup"]["cpu_usage_usec"] = 250000u;  // an integer that moved: "keys" + "a"
    b["gpm"]["sm_occupancy_pct"] = 42.0;      // a gauge that moved: "gkeys" + "g"
    b["gpm"]["nvlink"][1] = 900u;
    b["gpm"]["mig"] = "3g.40gb";  // a new key: the object is set whole
    Stepper s;
    s.step(a);
    const Json r = s.step(b);
    CHECK(r["set"].contains("/gpm"));
    CHECK(r["keys"] == Json::array({"/cgroup/cpu_usage_usec"}));
    CHECK(r["a"] == Json::array({249000}));
}

TEST_CASE("the keys list holds within a frame: a still counter is a 0, dropped after 64 records or a set") {
    Json tree = {{"t", 0.5}, {"k", {{"c1", 10u}, {"c2", 20u}}}, {"m", {{"x", 5}}}};
    Stepper s;
    s.step(tree);
    tree["k"]["c1"] = 11u, tree["k"]["c2"] = 22u, tree["m"]["x"] = 6;
    CHECK(s.step(tree)["keys"] == Json::array({"/k/c1", "/k/c2", "/m/x"}));
    tree["k"]["c1"] = 12u;  // c2 and x still: 0s, the list is not written again
    Json r = s.step(tree);
    CHECK_FALSE(r.contains("keys"));
    CHECK(r["a"] == Json::array({1, 0, 0}));
    tree["t"] = 1.5;  // nothing listed moved: no "a"; the time goes in "g"
    r = s.step(tree);
    CHECK_FALSE(r.contains("keys"));
    CHECK_FALSE(r.contains("a"));
    CHECK(r["gkeys"] == Json::array({"/t"}));
    CHECK(r["g"] == Json::array({1.5}));
    tree["m"] = {{"x", 6}, {"y", 1}};  // x's object set whole: x leaves the list
    r = s.step(tree);
    CHECK(r["keys"] == Json::array({"/k/c1", "/k/c2"}));
    CHECK(r["set"].contains("/m"));
    int rewrites = 0;
    for (int i = 0; i < 70; ++i) {  // c1 moves on; c2 was still since record 3: dropped once 64 old
        tree["k"]["c1"] = tree["k"]["c1"].get<std::uint64_t>() + 1;
        r = s.step(tree);
        if (r.contains("keys")) {
            ++rewrites;
            CHECK(r["keys"] == Json::array({"/k/c1"}));
            CHECK(i == 60);
        }
    }
    CHECK(rewrites == 1);
    tree["k"]["c2"] = 23u;  // moves again: appended
    CHECK(s.step(tree)["keys"] == Json::array({"/k/c1", "/k/c2"}));
}

TEST_CASE("an RDMA port's rx/tx bytes are listed derived while they are 4 x the data counters") {
    Json tree = {
        {"rdma", Json::array({{{"rx_bytes", 400u},
                               {"tx_bytes", 800u},
                               {"counters", {{"port_rcv_data", 100u}, {"port_xmit_data", 200u}}}}})}};
    Stepper s;
    s.step(tree);
    auto move = [&](std::uint64_t rcv, std::uint64_t xmit) {
        tree["rdma"][0]["counters"]["port_rcv_data"] = rcv;
        tree["rdma"][0]["counters"]["port_xmit_data"] = xmit;
        tree["rdma"][0]["rx_bytes"] = rcv * 4;
        tree["rdma"][0]["tx_bytes"] = xmit * 4;
    };
    move(150, 260);
    Json r = s.step(tree);
    CHECK(r["keys"] == Json::parse(R"([["/rdma/0/rx_bytes",4,"/rdma/0/counters/port_rcv_data"],
                                        ["/rdma/0/tx_bytes",4,"/rdma/0/counters/port_xmit_data"],
                                        "/rdma/0/counters/port_rcv_data","/rdma/0/counters/port_xmit_data"])"));
    CHECK(r["a"] == Json::array({50, 60}));  // the derived ones take no place
    move(151, 260);                          // xmit still: both tx entries 0, still derived
    r = s.step(tree);
    CHECK_FALSE(r.contains("keys"));
    CHECK(r["a"] == Json::array({1, 0}));
    move(160, 270);
    tree["rdma"][0]["tx_bytes"] = 5u;  // not derived this record: tx_bytes listed plain from now on
    r = s.step(tree);
    CHECK(r["keys"][1] == "/rdma/0/tx_bytes");
    CHECK(r["a"] == Json::array({-1035, 9, 10}));
    move(170, 280);
    r = s.step(tree);
    CHECK_FALSE(r.contains("keys"));
    CHECK(r["a"] == Json::array({1115, 10, 10}));
}

TEST_CASE("gauges: listed once, each record's values whole; NaN goes in a set and leaves the list") {
    Json tree = {{"time", 1.0}, {"gpus", Json::array({{{"power_w", 300.5}, {"temperature_c", 60.0}}})}};
    Stepper s;
    s.step(tree);
    tree["time"] = 2.0, tree["gpus"][0]["power_w"] = 301.25;
    Json r = s.step(tree);
    CHECK(r["gkeys"] == Json::array({"/time", "/gpus/0/power_w"}));
    CHECK(r["g"] == Json::array({2.0, 301.25}));
    tree["time"] = 3.0, tree["gpus"][0]["temperature_c"] = 61.0;  // power still: repeated
    r = s.step(tree);
    CHECK(r["gkeys"] == Json::array({"/time", "/gpus/0/power_w", "/gpus/0/temperature_c"}));
    CHECK(r["g"] == Json::array({3.0, 301.25, 61.0}));
    tree["time"] = 4.0, tree["gpus"][0]["power_w"] = std::numeric_limits<double>::quiet_NaN();
    r = s.step(tree);  // (NaN dumps as null, so the trees compare as the reader has them)
    CHECK(r["set"]["/gpus/0/power_w"].is_null());
    CHECK(r["gkeys"] == Json::array({"/time", "/gpus/0/temperature_c"}));
}

TEST_CASE("derived and gauge lists through the real reader: a node's samples read back exactly") {
    char tmpl[] = "/tmp/stallscope-lists-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string path = std::string(tmpl) + "/timeline.0.n.jsonl.zst";
    Snapshot base;
    base.time = 1'790'000'000;
    base.host = "n";
    for (int p = 0; p < 2; ++p) {
        RdmaPort port;
        port.device = "mlx5_" + std::to_string(p);
        port.port = 1;
        port.counters = {{"port_rcv_data", 1000u}, {"port_xmit_data", 2000u}, {"symbol_error", 0u}};
        port.rx_bytes = 4000u, port.tx_bytes = 8000u;
        base.rdma.push_back(port);
    }
    Gpu gpu;
    gpu.index = 0, gpu.power_w = 300.0, gpu.temperature_c = 50.0;
    base.gpus.push_back(gpu);
    std::vector<Snapshot> samples;
    for (int i = 0; i < 150; ++i) {  // past the idle drop (64 records) and a frame of 100
        Snapshot s = base;
        s.time += i;
        for (auto& p : s.rdma) {
            *p.counters["port_rcv_data"] += static_cast<std::uint64_t>(i) * 977;
            *p.counters["port_xmit_data"] += static_cast<std::uint64_t>(i) * (i < 40 ? 13 : 0);
            p.rx_bytes = *p.counters["port_rcv_data"] * 4;
            p.tx_bytes = *p.counters["port_xmit_data"] * 4;
        }
        if (i == 70) s.rdma[1].rx_bytes = 5u;  // once not derived
        s.gpus[0].power_w = 300.0 + (i % 7) * 0.125;
        if (i % 11 == 0) s.gpus[0].temperature_c = std::nullopt;  // a gauge going null and back
        samples.push_back(std::move(s));
    }
    std::vector<std::string> warnings;
    const std::vector<Snapshot> read = write_then_read(samples, path, &warnings, 100);
    CHECK(warnings.empty());
    REQUIRE(read.size() == samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        CAPTURE(i);
        CHECK(to_json(read[i]).dump() == to_json(samples[i]).dump());
    }
    std::remove(path.c_str());
    ::rmdir(tmpl);
}

TEST_CASE("a reader's kept node is looked up again once a set replaced what holds it") {
    SnapshotDiffDecoder decoder;
    decoder.keyframe(Json{{"rdma", Json::array({{{"counters", {{"x", 10u}}}}})}});
    std::string problem;
    SnapshotDiffDecoder::NodeRef ref;
    REQUIRE(decoder.add(ref, "/rdma/0/counters/x", 5, problem));
    const Json* first = ref.node;
    REQUIRE(decoder.add(ref, "/rdma/0/counters/x", 5, problem));
    CHECK(ref.node == first);  // the same generation: not looked up again
    // A second port appears: the array is set whole, every node under it is new.
    REQUIRE(decoder.set("/rdma", Json::array({{{"counters", {{"x", 100u}}}}, {{"counters", {{"x", 7u}}}}}),
                        problem));
    REQUIRE(decoder.add(ref, "/rdma/0/counters/x", 1, problem));
    CHECK(decoder.tree()["rdma"][0]["counters"]["x"] == 101u);
    // A pointer the new tree lacks fails with the problem, and the ref is not kept.
    REQUIRE(decoder.set("/rdma", Json::array(), problem));
    CHECK_FALSE(decoder.add(ref, "/rdma/0/counters/x", 1, problem));
    CHECK(problem.find("does not have") != std::string::npos);
    bool changed = false;
    SnapshotDiffDecoder::NodeRef gauge;
    decoder.keyframe(Json{{"g", 1.5}});
    REQUIRE(decoder.set_number(gauge, "/g", 2.5, changed, problem));
    CHECK(changed);
    REQUIRE(decoder.set_number(gauge, "/g", 2.5, changed, problem));
    CHECK_FALSE(changed);
    decoder.keyframe(Json{{"g", 9.0}});  // a new frame: a new tree
    REQUIRE(decoder.set_number(gauge, "/g", 3.0, changed, problem));
    CHECK(decoder.tree()["g"] == 3.0);
}

TEST_CASE("the text time is derived from unix_time: to_json's samples carry the number only") {
    Snapshot a;
    a.time = 1'795'160'400.25;
    Stepper s;
    s.step(to_json(a));
    for (int i = 1; i <= 3; ++i) {  // the Stepper checks the reader's tree, "/time" text included
        a.time += 1.5;
        const Json r = s.step(to_json(a));
        CHECK_FALSE(r.contains("set"));
        CHECK(r["g"].back() == a.time);
    }
    CHECK(s.reader.decoder.tree()["time"] == "2026-11-20T07:40:04.750Z");
    // The faster writer (from the Snapshot, not its tree) keeps to the same rule.
    SnapshotDiffEncoder fast;
    RecordReader reader;
    std::string text;
    Snapshot b;
    b.time = 1'795'160'400.25;
    for (int i = 0; i < 3; ++i, b.time += 1) {
        text.clear();
        fast.append_record(b, text);
        const Json r = Json::parse(text);
        if (i > 0) CHECK_FALSE(r.contains("set"));
        reader.apply(r);
        CHECK(reader.decoder.tree().dump() == to_json(b).dump());
    }
}

TEST_CASE("a text time that is not the derived one is written, even when it did not change") {
    Json tree = {{"time", "start"}, {"unix_time", 100.5}, {"x", 1u}};
    Stepper s;
    s.step(tree);
    tree["unix_time"] = 101.5;  // the text stays "start": a reader would derive, so it is set
    Json r = s.step(tree);
    CHECK(r["set"] == Json{{"/time", "start"}});
    tree["unix_time"] = 102.5, tree["time"] = "later";
    CHECK(s.step(tree)["set"] == Json{{"/time", "later"}});
    tree["unix_time"] = 103.5, tree["time"] = format_rfc3339(103.5);  // back to the derived text
    CHECK_FALSE(s.step(tree).contains("set"));
    tree["time"] = "edited";  // the number still: an ordinary change
    CHECK(s.step(tree)["set"] == Json{{"/time", "edited"}});
    // No finite number: written as null, so nothing is derived and the text is written.
    tree["unix_time"] = std::numeric_limits<double>::quiet_NaN(), tree["time"] = format_rfc3339(0);
    r = s.step(tree);
    CHECK(r["set"].contains("/time"));
    CHECK(r["set"]["/unix_time"].is_null());
    tree["unix_time"] = 7u, tree["time"] = format_rfc3339(7);  // an integer: derived as well
    r = s.step(tree);
    CHECK(r["set"] == Json{{"/unix_time", 7u}});
}

TEST_CASE("records that set the text time themselves (written before the rule) read the same") {
    RecordReader reader;
    reader.apply(Json{{"type", "sample"}, {"full", {{"time", format_rfc3339(10.0)}, {"unix_time", 10.0}}}});
    reader.apply(Json{{"type", "sample"},
                      {"gkeys", Json::array({"/unix_time"})},
                      {"g", Json::array({11.0})},
                      {"set", {{"/time", "as written"}}}});
    CHECK(reader.decoder.tree()["time"] == "as written");
    reader.apply(Json{{"type", "sample"}, {"g", Json::array({12.0})}});
    CHECK(reader.decoder.tree()["time"] == format_rfc3339(12.0));
    reader.apply(Json{{"type", "sample"}, {"g", Json::array({12.0})}});  // no move: nothing derived
    CHECK(reader.decoder.tree()["time"] == format_rfc3339(12.0));
}

TEST_CASE("counters compared in place: down, null, resets past a signed delta, the INT64_MAX edge") {
    // The per-part writer compares an unsigned counter without building its JSON (diff_counter_leaf) and
    // hands every other case to the tree comparison: it must write exactly what comparing trees writes,
    // and the samples must read back. Map counters (RDMA) and member counters (interfaces) both.
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    constexpr std::uint64_t kSignedMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    Snapshot s = test::full_snapshot();
    REQUIRE(!s.rdma.empty());
    REQUIRE(!s.interfaces.empty());
    std::vector<Snapshot> samples;
    for (const Counter value : {Counter{100}, Counter{50}, Counter{kMax}, Counter{0}, Counter{}, Counter{5},
                                Counter{5 + kSignedMax}, Counter{5}, Counter{5}, Counter{6},
                                Counter{6 + kSignedMax + 1}, Counter{6}}) {
        s.time += 1;
        s.rdma[0].counters["port_xmit_data"] = value;
        s.rdma[0].hw_counters["rx_icrc_encapsulated"] = value;
        s.interfaces[0].rx_bytes = value;
        samples.push_back(s);
    }
    std::size_t adds = 0, sets = 0;
    for (const std::string& record : test::records_by_part_checked(samples)) {
        const Json r = Json::parse(record);
        if (r.contains("a")) ++adds;
        if (r.contains("set") && r["set"].contains("/rdma/0/counters/port_xmit_data")) ++sets;
    }
    // Differences: 100 -> 50, 5 -> 5 + INT64_MAX -> 5, 5 -> 6. Sets: 50 -> UINT64_MAX -> 0 (too far for a
    // signed difference), -> null, null -> 5, 6 -> 6 + 2^63 -> 6 (one past INT64_MAX, both ways).
    CHECK(adds == 4);
    CHECK(sets == 6);
    char dir[] = "/tmp/stallscope-inplace-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const auto read = write_then_read(samples, std::string(dir) + "/t.jsonl.zst");
    REQUIRE(read.size() == samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i)
        CHECK(to_json(read[i]).dump() == to_json(samples[i]).dump());
}

TEST_CASE("add and set_number change a value in place with the type and wrap of whole assignment") {
    SnapshotDiffDecoder decoder;
    decoder.keyframe(Json{{"u", std::numeric_limits<std::uint64_t>::max()},
                          {"i", std::int64_t{-5}},
                          {"top", std::numeric_limits<std::int64_t>::max()},
                          {"f", 1.5},
                          {"n", 3u},
                          {"s", "text"}});
    std::string problem;
    REQUIRE(decoder.add("/u", 2, problem));  // an unsigned counter wraps as the writer's subtraction did
    CHECK(decoder.tree()["u"].is_number_unsigned());
    CHECK(decoder.tree()["u"].get<std::uint64_t>() == 1u);
    REQUIRE(decoder.add("/i", 7, problem));  // a signed value stays signed
    CHECK(decoder.tree()["i"].is_number_integer());
    CHECK_FALSE(decoder.tree()["i"].is_number_unsigned());
    CHECK(decoder.tree()["i"].get<std::int64_t>() == 2);
    REQUIRE(decoder.add("/top", 1, problem));  // and wraps in unsigned arithmetic, without overflow
    CHECK(decoder.tree()["top"].get<std::int64_t>() == std::numeric_limits<std::int64_t>::min());
    CHECK_FALSE(decoder.add("/f", 1, problem));
    CHECK(problem.find("not an integer") != std::string::npos);
    CHECK_FALSE(decoder.add("/s", 1, problem));
    bool changed = false;
    REQUIRE(decoder.set_number("/f", 2.25, changed, problem));
    CHECK(changed);
    CHECK(decoder.tree()["f"].get<double>() == 2.25);
    REQUIRE(decoder.set_number("/n", 4.0, changed, problem));  // an integer node becomes a float
    CHECK(changed);
    CHECK(decoder.tree()["n"].is_number_float());
    REQUIRE(decoder.set_number("/s", 0.5, changed, problem));
    CHECK(decoder.tree()["s"].get<double>() == 0.5);
    CHECK(decoder.tree().dump() == R"({"u":1,"i":2,"top":-9223372036854775808,"f":2.25,"n":4.0,"s":0.5})");
}

TEST_CASE("a \"/unix_time\" caught up later derives \"/time\" as the record that moved it last did") {
    // A reader that keeps the time elsewhere writes "/unix_time" into the tree only when something reads
    // the tree, then calls unix_time_moved(): the text must be what deriving on every record gave, the
    // derived text of the number now, even where the number came back to the one end_record remembered.
    SnapshotDiffDecoder d;
    d.keyframe(Json{{"time", "as written"}, {"unix_time", 10.0}});
    std::string problem;
    bool changed = false;
    REQUIRE(d.set_number("/unix_time", 12.0, changed, problem));
    d.unix_time_moved();
    CHECK(d.tree()["time"] == format_rfc3339(12.0));
    d.keyframe(Json{{"time", "as written"}, {"unix_time", 10.0}});
    REQUIRE(d.set_number("/unix_time", 10.0, changed, problem));  // moved to 11, then back, unseen
    d.end_record();
    CHECK(d.tree()["time"] == "as written");  // end_record saw no move
    d.unix_time_moved();
    CHECK(d.tree()["time"] == format_rfc3339(10.0));
}
