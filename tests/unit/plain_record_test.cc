// read_plain_record (libstallscope/timeline/plain_record.h): the v2 reader's On Demand shortcut takes a
// line only when it reads it exactly as the DOM would, and leaves every other line to the DOM.
#include "libstallscope/timeline/plain_record.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace stallscope;

namespace {

// The line with simdjson's padding after it, as TimelineInput hands lines out.
bool plain(const std::string& line, PlainRecord& out) {
    static simdjson::ondemand::parser parser;
    std::string padded = line + std::string(simdjson::SIMDJSON_PADDING, ' ');
    return read_plain_record(parser, std::string_view(padded.data(), line.size()), simdjson::SIMDJSON_PADDING,
                             out);
}

// What the DOM path reads from the same line's "a" and "g" (both present and well formed).
PlainRecord dom(const std::string& line) {
    static simdjson::dom::parser parser;
    simdjson::dom::object object;
    REQUIRE(parser.parse(line).get_object().get(object) == simdjson::SUCCESS);
    PlainRecord r;
    simdjson::dom::array list;
    REQUIRE(object["a"].get_array().get(list) == simdjson::SUCCESS);
    REQUIRE(dom_integers(list, r.a));
    r.has_g = object["g"].get_array().get(list) == simdjson::SUCCESS;
    if (r.has_g) REQUIRE(dom_numbers(list, r.g));
    return r;
}

}  // namespace

TEST_CASE("a plain record is read number for number as the DOM reads it") {
    for (
        const std::string line : {
            R"({"type":"sample","a":[-47844498,1026320000,0,9223372036854775807,-9223372036854775808],"g":[1790000004.0,30.213299999999997,98,-0.0,1e-07,5e-324,1.7976931348623157e308,18446744073709551615]})",
            R"({"type":"sample","a":[]})",
            R"({ "g" : [ 1 ] , "a" : [ 2 ] , "type" : "sample" })",  // any order, any spacing
            R"({"type":"sample","a":[1],"g":[]}   )",                // trailing blanks
            R"({"t\u0079pe":"sample","\u0061":[3]})",                // escaped keys, as the DOM unescapes
            R"({"type":"sample","a":[1],"g":[-9223372036854775808,9223372036854775808,-0,0.0]})",
            R"({"type":"sample","a":[1],"g":[0.000000000000000000000,-0.0000000000000000000000,0e5,-0.0e-3]})",  // zeros
        }) {
        CAPTURE(line);
        PlainRecord fast;
        REQUIRE(plain(line, fast));
        const PlainRecord expected = dom(line);
        CHECK(fast.a == expected.a);
        CHECK(fast.has_g == expected.has_g);
        REQUIRE(fast.g.size() == expected.g.size());
        for (std::size_t i = 0; i < fast.g.size(); ++i) {
            CHECK(fast.g[i] == expected.g[i]);
            CHECK(std::signbit(fast.g[i]) == std::signbit(expected.g[i]));
        }
    }
}

TEST_CASE("anything else is left to the DOM") {
    for (const std::string line : {
             R"({"type":"sample","keys":["/x"],"a":[1]})",     // a key list: the DOM path reads it
             R"({"type":"sample","a":[1],"set":{"/x":"y"}})",  // set, add, gkeys, full, ...
             R"({"type":"sample","a":[1],"a":[2]})",           // a repeated key (the DOM takes the first)
             R"({"type":"sample","type":"sample","a":[1]})",
             R"({"type":"header","a":[1]})",                    // not a sample
             R"({"a":[1]})",                                    // no type
             R"({"type":"sample","g":[1]})",                    // no "a"
             R"({"type":"sample","a":[1.0]})",                  // not an integer: the DOM warns
             R"({"type":"sample","a":[9223372036854775808]})",  // past int64
             R"({"type":"sample","a":[1],"g":[123456789012345678901234567890]})",  // past 64 bits
             R"({"type":"sample","a":[1],"g":[-9223372036854775809]})",            // below int64
             // 19 digits or more: simdjson 3.0.1's get_number() reads these as 0 (its issue #2099).
             R"({"type":"sample","a":[1],"g":[63.24567801234567890]})",
             R"({"type":"sample","a":[1],"g":[1000000000.000000001e3]})",
             R"({"type":"sample","a":[1],"g":[-0.12345678901234567890123]})",
             R"({"type":"sample","a":[1],"g":["1"]})",
             R"({"type":"sample","a":[1],"g":null})",
             R"({"type":"sample","a":[1]} {"type":"sample","a":[2]})",  // two objects on a line
             R"({"type":"sample","a":[1]}x)",
             R"({"type":"sample","a":[1,]})",  // broken JSON: the DOM's warning
             R"({"type":"sample","a":[1 2]})",
             R"({"type":"sample","a":[1],})",
             R"({"type":"sample","a":[1])",  // torn
             R"([{"type":"sample","a":[1]}])",
             "",
         }) {
        CAPTURE(line);
        PlainRecord out;
        CHECK_FALSE(plain(line, out));
    }
}
