// The timeline reader's invariant check (kept_sample_check.h): it passes a kept sample and cached
// locations that are right, and names each kind of drift the reader's shortcuts could introduce.
#include <doctest/doctest.h>
#include <simdjson.h>

#include "libstallscope/timeline/kept_sample_check.h"
#include "tests/unit/snapshot_fixture.h"

using namespace stallscope;

namespace {

// A "keys" list as the reader reads it from a record.
CounterList keys_list(const char* json) {
    simdjson::dom::parser parser;
    simdjson::dom::array list;
    REQUIRE(parser.parse(std::string_view(json)).get_array().get(list) == simdjson::SUCCESS);
    CounterList keys;
    std::string problem;
    REQUIRE_MESSAGE(keys.read(list, problem), problem);
    return keys;
}

}  // namespace

TEST_CASE("a kept sample equal to the tree's whole reading passes the check") {
    const Snapshot s = stallscope::test::full_snapshot();
    CHECK(kept_sample_difference(to_json(s), s).empty());
}

TEST_CASE("a kept counter one off from the tree is named, with both values") {
    const Snapshot s = stallscope::test::full_snapshot();
    Snapshot kept = s;
    REQUIRE(!kept.gpus.empty());
    kept.gpus[0].energy_mj = *s.gpus[0].energy_mj + 1;
    const std::string difference = kept_sample_difference(to_json(s), kept);
    CHECK(difference.find("'/gpus/0/energy_mj'") != std::string::npos);
    CHECK(difference.find("123457") != std::string::npos);
    CHECK(difference.find("123456") != std::string::npos);
}

TEST_CASE("a kept gauge of -0.0 where the tree holds 0.0 is a difference (it would dump differently)") {
    Snapshot s = stallscope::test::full_snapshot();
    REQUIRE(!s.gpus.empty());
    s.gpus[0].power_w = 0.0;
    Snapshot kept = s;
    kept.gpus[0].power_w = -0.0;
    CHECK(s == kept);  // what operator== alone would miss
    CHECK_FALSE(kept_sample_difference(to_json(s), kept).empty());
}

TEST_CASE("a tree that does not read cleanly is reported, not compared") {
    const Snapshot s = stallscope::test::full_snapshot();
    Json tree = to_json(s);
    tree["gpus"] = "not an array";
    CHECK(kept_sample_difference(tree, s).find("does not read cleanly") != std::string::npos);
}

TEST_CASE("the reader's cached locations: right ones pass, a stale one and a wrong moving list are named") {
    Snapshot kept = stallscope::test::full_snapshot();
    const Json tree = to_json(kept);
    CounterList keys = keys_list(R"(["/rdma/0/counters/port_rcv_data","/gpus/0/energy_mj"])");
    REQUIRE(keys.used == 2);
    GaugeList gauges;
    constexpr std::uint64_t kLayout = 7, kEpoch = 3;
    for (std::size_t i = 0; i < keys.used; ++i) {
        keys.counter[i] = kept_counter(kept, keys.kept[i]);
        REQUIRE(keys.counter[i] != nullptr);
        keys.counter_layout[i] = kLayout;
        keys.kept_only[i] = kEpoch;
    }
    std::vector<const Counter*> moving = {keys.counter[0], keys.counter[1]};
    CHECK(reader_state_difference(tree, kept, keys, gauges, kLayout, kEpoch, moving).empty());

    SUBCASE("an entry pointing at another counter") {
        std::swap(keys.counter[0], keys.counter[1]);
        CHECK(reader_state_difference(tree, kept, keys, gauges, kLayout, kEpoch, moving)
                  .find("another counter") != std::string::npos);
    }
    SUBCASE("an entry kept alone whose location is from an older layout") {
        keys.counter_layout[1] = kLayout - 1;
        CHECK(reader_state_difference(tree, kept, keys, gauges, kLayout, kEpoch, moving).find("kept alone") !=
              std::string::npos);
    }
    SUBCASE("moving counters that are not the ones \"keys\" names") {
        moving.pop_back();
        CHECK(reader_state_difference(tree, kept, keys, gauges, kLayout, kEpoch, moving).find("moving") !=
              std::string::npos);
    }
}
