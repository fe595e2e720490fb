// The bounded pickle reader and the flight-recorder summary on dumps written from the documented layout
// (fixtures/hang/make_fr_dumps.py), and on inputs it must refuse.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "libstallscope/hang/flight_recorder.h"
#include "libstallscope/hang/pickle_reader.h"

using namespace stallscope;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(STALLSCOPE_FIXTURES_DIR) + "/hang/fr/" + name, std::ios::binary);
    REQUIRE(in.good());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

FlightRecorderDump read_dump(const std::string& name) {
    FlightRecorderDump d;
    std::vector<std::string> warnings;
    std::string error;
    REQUIRE_MESSAGE(read_flight_recorder_dump(fixture(name), d, warnings, error), error);
    CHECK(warnings.empty());
    return d;
}

bool parses(std::string_view bytes, std::string& error, const PickleLimits& limits = {}) {
    PickleDocument doc;
    return parse_pickle(bytes, doc, error, limits);
}

}  // namespace

TEST_CASE("a rank one collective behind: its dump says last enqueued 20584 in default_pg") {
    const FlightRecorderDump d = read_dump("behind-by-one/nccl_trace_rank_2");
    CHECK(d.version == "2.10");
    CHECK(d.comm_lib_version == "2.27.5");
    CHECK(d.entries == 7);
    const FlightRecorderGroup* g = d.group("0");
    REQUIRE(g);
    CHECK(g->desc == "default_pg");
    CHECK(g->ranks == "[0, 1, 2, 3]");
    CHECK(g->last_enqueued == 20584);
    CHECK(g->last_completed == 20584);
    CHECK_FALSE(g->last_started.has_value());  // -1 in the dump: timing off, not a sequence number
    CHECK_FALSE(g->status_from_entries);
    REQUIRE(g->newest.size() == kNewestEntriesPerGroup);
    CHECK(g->newest.back().collective_seq_id == 20584);
    CHECK(g->newest.back().profiling_name == "nccl:all_reduce");
    CHECK(g->newest.back().input_sizes == "[[1259621]]");
    CHECK(g->newest.back().input_dtypes == "Float");
    CHECK(g->newest.back().state == "completed");
    const FlightRecorderGroup* tp = d.group("1");
    REQUIRE(tp);
    CHECK(tp->desc == "tp_group");
    CHECK(tp->last_enqueued == 411);
}

TEST_CASE("the ranks that arrived have the collective the late rank never enqueued, still scheduled") {
    const FlightRecorderDump d = read_dump("behind-by-one/nccl_trace_rank_0");
    const FlightRecorderEntry* e = d.entry("0", 20585);
    REQUIRE(e);
    CHECK(e->state == "scheduled");
    CHECK(e->profiling_name == "nccl:all_reduce");
    CHECK(d.group("0")->last_enqueued == 20585);
}

TEST_CASE("Python's protocol 4 (FRAME, SHORT_BINUNICODE, MEMOIZE) reads to the same summary as protocol 2") {
    FlightRecorderDump p4 = read_dump("protocol4/nccl_trace_rank_1");
    const FlightRecorderDump p2 = read_dump("behind-by-one/nccl_trace_rank_1");
    CHECK(p4 == p2);
}

TEST_CASE("a dump without pg_status (2.2): the status comes from the entries") {
    const FlightRecorderDump d = read_dump("old-format/nccl_trace_rank_0");
    const FlightRecorderGroup* g = d.group("0");
    REQUIRE(g);
    CHECK(g->status_from_entries);
    CHECK(g->last_enqueued == 120);
    CHECK(g->last_completed == 118);
}

TEST_CASE("the summary survives its JSON round trip (the evidence file's form)") {
    FlightRecorderDump d = read_dump("behind-by-one/nccl_trace_rank_3");
    d.rank = 3;
    std::vector<std::string> problems;
    const FlightRecorderDump back = flight_recorder_from_json(Json::parse(to_json(d).dump()), problems);
    CHECK(problems.empty());
    CHECK(back == d);
}

TEST_CASE("refused: a global outside the jit helpers, a cut dump, JSON, an empty input") {
    std::string error;
    CHECK_FALSE(parses(fixture("garbage/calls_os_system"), error));
    CHECK(error.find("os.system") != std::string::npos);
    CHECK_FALSE(parses(fixture("garbage/truncated"), error));
    CHECK(error.find("truncated") != std::string::npos);
    CHECK_FALSE(parses(fixture("garbage/not_a_pickle"), error));
    CHECK_FALSE(parses("", error));
    FlightRecorderDump d;
    std::vector<std::string> warnings;
    CHECK_FALSE(read_flight_recorder_dump("\x80\x02K\x05.", d, warnings, error));  // a pickled int
    CHECK(error.find("not a dict") != std::string::npos);
}

TEST_CASE("the jit pickler's build_intlist is read as the list it rebuilds") {
    // GLOBAL torch.jit._pickle build_intlist, a tuple holding [1, 2], REDUCE
    using namespace std::string_literals;
    const std::string bytes =
        "\x80\x02"
        "ctorch.jit._pickle\nbuild_intlist\n]q\x00(K\x01K\x02"
        "e\x85R."s;
    PickleDocument doc;
    std::string error;
    REQUIRE_MESSAGE(parse_pickle(bytes, doc, error), error);
    CHECK(root_of(doc).repr() == "[1, 2]");
}

TEST_CASE("limits: memo copies cannot multiply a value past the value budget, nesting is capped") {
    // [x] memoised, then 40 references to it appended to a new list, 20 times over (a "billion laughs").
    using namespace std::string_literals;
    std::string bomb = "\x80\x02]q\x00("s;
    for (int i = 0; i < 200; ++i) bomb += "K\x01";
    bomb += "e";
    for (int round = 0; round < 20; ++round) {
        bomb += "](";
        for (int i = 0; i < 40; ++i) bomb += "h\x00"s;
        bomb += "eq";
        bomb += '\0';
    }
    bomb += ".";
    PickleLimits limits;
    limits.max_values = 10000;
    std::string error;
    CHECK_FALSE(parses(bomb, error, limits));
    CHECK_MESSAGE(error.find("limit") != std::string::npos, error);

    std::string deep = "\x80\x02";
    for (int i = 0; i < 100; ++i) deep += "]";
    for (int i = 0; i < 99; ++i) deep += "a";
    deep += ".";
    CHECK_FALSE(parses(deep, error));
    CHECK(error.find("nesting") != std::string::npos);
    limits = PickleLimits{};
    limits.max_height = 128;
    CHECK(parses(deep, error, limits));
}

TEST_CASE("integers: BININT is signed, LONG1 sign-extends, wider than 64 bits is refused") {
    PickleDocument doc;
    std::string error;
    REQUIRE(parse_pickle(std::string("\x80\x02J\xff\xff\xff\xff.", 8), doc, error));
    CHECK(root_of(doc).as_int() == -1);
    REQUIRE(parse_pickle(std::string("\x80\x02\x8a\x08\xca\x15\x0f\x10\xe5\x27\xc2\x18.", 14), doc, error));
    CHECK(root_of(doc).as_int() == 1784032267162555850);
    REQUIRE(parse_pickle(std::string("\x80\x02\x8a\x01\xff.", 6), doc, error));
    CHECK(root_of(doc).as_int() == -1);
    CHECK_FALSE(
        parse_pickle(std::string("\x80\x02\x8a\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01.", 15), doc, error));
}

TEST_CASE("rank lists as pg_config writes them") {
    CHECK(parse_rank_list("[0, 1, 2, 3]") == std::vector<int>{0, 1, 2, 3});
    CHECK(parse_rank_list("[]").empty());
    CHECK(parse_rank_list("[0, x]").empty());
}
