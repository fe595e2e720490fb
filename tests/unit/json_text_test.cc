// append_compact_json: the same bytes as nlohmann's dump(), or false where it does not mirror dump()
// (ill-formed UTF-8, where dump() throws).
#include "libstallscope/model/json_text.h"

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

// Writes `j` with append_compact_json: the text must be dump()'s, or declined exactly where dump() throws.
struct AgreesWithDump {
    std::size_t written = 0, declined = 0;
    void operator()(const Json& j) {
        std::string out;
        if (append_compact_json(out, j)) {
            ++written;
            CHECK(out == j.dump());
        } else {
            ++declined;
            CHECK_THROWS(j.dump());
        }
    }
};
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

TEST_CASE("well-formed UTF-8 is written as dump() writes it: as is") {
    Json j = Json::object();
    j["caf\xc3\xa9"] =
        "fabric congestion \xe2\x80\x94 CNPs at 12/s, \xf0\x9f\x94\xa5 \xef\xbf\xbf\xf4\x8f\xbf\xbf";
    CHECK(compact(j) == j.dump());
}

// Every 1- and 2-byte string, and 3- and 4-byte ones around each lead's limits: the writer agrees with
// dump() where dump() writes, and declines exactly where dump() throws.
TEST_CASE("ill-formed UTF-8 is declined exactly where dump() throws") {
    AgreesWithDump agrees;
    const auto check = [&](const std::string& bytes) { agrees(Json("<" + bytes + ">")); };
    for (int a = 0; a < 256; ++a) {
        check(std::string(1, static_cast<char>(a)));
        for (int b = 0; b < 256; ++b) check({static_cast<char>(a), static_cast<char>(b)});
    }
    const unsigned char edges[] = {0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff};
    for (int lead = 0xe0; lead <= 0xff; ++lead)
        for (const unsigned char second : edges)
            for (const unsigned char third : edges) {
                const std::string three = {static_cast<char>(lead), static_cast<char>(second),
                                           static_cast<char>(third)};
                check(three);
                for (const unsigned char fourth : edges) check(three + static_cast<char>(fourth));
            }
    CHECK(agrees.written > 2000);
    CHECK(agrees.declined > 2000);
}

// Strings of 8 bytes and more are scanned a word at a time: every byte value at every position of a
// 17-byte string, so each lane of two words and the tail are checked.
TEST_CASE("every byte at every position of a longer string: dump()'s text, or declined where it throws") {
    AgreesWithDump agrees;
    for (int c = 0; c < 256; ++c)
        for (std::size_t at = 0; at < 17; ++at) {
            std::string text = "counter_name_abcd";
            text[at] = static_cast<char>(c);
            agrees(Json(text));
        }
    CHECK(agrees.written == 128 * 17);   // ASCII, escaped or not
    CHECK(agrees.declined == 128 * 17);  // a lone byte >= 0x80 is never well-formed
}

TEST_CASE("binary values are left to dump()") {
    std::string out;
    CHECK_FALSE(append_compact_json(out, Json::binary({1, 2})));
}
