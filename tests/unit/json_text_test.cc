// append_compact_json: the same bytes as nlohmann's dump(), or false where it does not mirror dump().
#include "libstallscope/timeline/json_text.h"

#include <doctest/doctest.h>

#include <limits>

#include "tests/unit/snapshot_fixture.h"

using namespace stallscope;

namespace {
std::string compact(const Json& j) {
    std::string out;
    REQUIRE(append_compact_json(out, j));
    return out;
}
}  // namespace

TEST_CASE("a whole snapshot's JSON is dump()'s text, byte for byte") {
    const Json tree = to_json(test::full_snapshot());
    CHECK(compact(tree) == tree.dump());
}

TEST_CASE("escapes, numbers and empty containers as dump() writes them") {
    Json j = Json::object();
    j["ctl"] = std::string("a\"b\\c\b\f\n\r\t\x01\x1f\x7f/end");
    j["k\ney"] = 1;
    j["ints"] = Json::array({0, -1, std::numeric_limits<std::int64_t>::min(), 18446744073709551615ull});
    j["floats"] =
        Json::array({0.0, -0.0, 0.1, 1.0, -2.5e-300, 1e300, 123456789.125,
                     std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()});
    j["empty"] = Json::array({Json::object(), Json::array(), Json(), true, false, ""});
    CHECK(compact(j) == j.dump());
}

TEST_CASE("non-ASCII text and binary values are left to dump() (it checks UTF-8 and may throw)") {
    std::string out;
    CHECK_FALSE(append_compact_json(out, Json("caf\xc3\xa9")));
    out.clear();
    CHECK_FALSE(append_compact_json(out, Json::object({{"\xff", 1}})));
    out.clear();
    CHECK_FALSE(append_compact_json(out, Json::binary({1, 2})));
}
