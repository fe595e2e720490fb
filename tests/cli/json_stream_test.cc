// The job merge's streamed JSON and one-pass verdict parse (issue 37 item 6) against nlohmann's own:
// JsonStream must write what dump(indent) writes for the document built whole, and
// parse_within_json_bounds must build what Json::parse builds, less the members it is told to skip.
#include <doctest/doctest.h>

#include <string>

#include "libstallscope/job/json_bounds.h"
#include "libstallscope/job/json_stream.h"

using namespace stallscope;

namespace {

const Json& sample_document() {
    static const Json doc = Json::parse(R"({
        "schema": "x/1", "empty_object": {}, "empty_array": [],
        "nested": {"a": [1, 2.5, null, true, "s\n\"q\""], "b": {"c": {}, "d": [[], [{}]]}},
        "rows": [{"host": "h1", "v": 1e300, "w": -0.0}, {"host": "h2", "v": 12.34, "w": 100.0}],
        "tail": "end"
    })");
    return doc;
}

// The sample written through JsonStream: scalars and small values as members, "nested" and "rows"
// opened and filled entry by entry.
std::string streamed(int indent) {
    const Json& doc = sample_document();
    std::string text;
    JsonStream out([&](std::string_view piece) { text.append(piece); }, indent);
    out.open_object();
    out.member("schema", doc["schema"]);
    out.member("empty_object", doc["empty_object"]);
    out.open_array("empty_array");
    out.close();
    out.open_object("nested");
    out.member("a", doc["nested"]["a"]);
    out.open_object("b");
    out.open_object("c");
    out.close();
    out.open_array("d");
    out.element(Json::array());
    out.element(doc["nested"]["b"]["d"][1]);
    out.close();
    out.close();
    out.close();
    out.open_array("rows");
    for (const auto& row : doc["rows"]) out.element(row);
    out.close();
    out.member("tail", doc["tail"]);
    out.close();
    out.finish();
    return text;
}

}  // namespace

TEST_CASE("JsonStream writes what dump() writes, compact and at every indent") {
    for (const int indent : {-1, 0, 1, 2, 4})
        CHECK(streamed(indent) == sample_document().dump(indent, ' ', false, Json::error_handler_t::replace));
}

TEST_CASE("JsonStream replaces invalid UTF-8 as dump(replace) does, in keys and values") {
    const std::string bad = "h\xff\xfe";
    std::string text;
    JsonStream out([&](std::string_view piece) { text.append(piece); }, 2);
    out.open_object();
    out.member(bad, bad);
    out.close();
    out.finish();
    Json whole = Json::object();
    whole[bad] = bad;
    CHECK(text == whole.dump(2, ' ', false, Json::error_handler_t::replace));
}

TEST_CASE("JsonStream hands its sink blocks, not one piece per value") {
    std::size_t pieces = 0, bytes = 0;
    JsonStream out(
        [&](std::string_view piece) {
            ++pieces;
            bytes += piece.size();
        },
        2);
    out.open_array();
    for (int i = 0; i < 100000; ++i) out.element(i);
    out.close();
    out.finish();
    CHECK(bytes > 600000);
    CHECK(pieces < bytes / 30000);
}

TEST_CASE("parse_within_json_bounds builds what Json::parse builds, less the members left out") {
    const std::string text =
        R"({"keep": {"a": [1, {"b": null}], "a": "last"}, "skip": {"deep": [[[{"x": 1}]]]}, "keep": 2,)"
        R"( "scalar_skip": 5, "tail": [true, "t", 1.5, -3, 18446744073709551615]})";
    auto keep = [](std::string_view key) { return key != "skip" && key != "scalar_skip"; };
    Json built;
    std::string why;
    REQUIRE(parse_within_json_bounds(text, verdict_file_bounds(), keep, built, why));
    Json expected = Json::parse(text);
    expected.erase("skip");
    expected.erase("scalar_skip");
    CHECK(built == expected);
    CHECK(built.dump() == expected.dump());  // same member order: a repeated key keeps its first place
}

TEST_CASE("parse_within_json_bounds refuses as within_json_bounds does, skipped members counted") {
    auto keep_none = [](std::string_view) { return false; };
    const std::string deep = R"({"skip": )" + std::string(100, '[') + std::string(100, ']') + "}";
    const std::string broken = R"({"skip": [1, 2)";
    for (const std::string& text : {deep, broken}) {
        Json built;
        std::string why_one, why_check;
        CHECK_FALSE(parse_within_json_bounds(text, verdict_file_bounds(), keep_none, built, why_one));
        CHECK_FALSE(within_json_bounds(text, verdict_file_bounds(), why_check));
        CHECK(why_one == why_check);
    }
}
