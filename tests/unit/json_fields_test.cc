// json_fields::Reader, the one typed accessor every reader of untrusted JSON uses (timelines, Inspector
// records, RAS JSON, verdict and summary files read back): a value of the wrong type is a named problem
// and an absent value, never an exception and never a silently converted number.
#include <doctest/doctest.h>

#include "libstallscope/model/json_fields.h"

using stallscope::Json;
using stallscope::json_fields::Reader;

TEST_CASE("every accessor declines a value of the wrong type with a problem naming the key") {
    const Json doc = Json::parse(R"({"n": "12", "u": -1, "i": 1.5, "s": {"a": 1}, "list": [1, "x", {}],
                                    "objs": 7, "ok_u": 18446744073709551615, "ok_i": -3, "ok_s": "x"})");
    std::vector<std::string> problems;
    const Reader r{doc, problems, "top"};
    CHECK_NOTHROW(CHECK_FALSE(r.number("n")));
    CHECK_FALSE(r.u64("u"));
    CHECK_FALSE(r.integer("i"));
    CHECK(r.string("s").empty());
    CHECK(r.objects<int>("objs", [](const Reader&) { return 1; }).empty());
    REQUIRE(problems.size() == 5);
    CHECK(problems[0] == "top.n: expected a number");
    CHECK(problems[1] == "top.u: expected an unsigned integer");
    CHECK(problems[4] == "top.objs: expected an array");
    // Values of the right type come through exactly; absent keys are absent, not problems.
    CHECK(r.u64("ok_u") == 18446744073709551615ULL);
    CHECK(r.integer("ok_i") == -3);
    CHECK(r.string("ok_s") == "x");
    CHECK_FALSE(r.u64("missing"));
    CHECK(r.strings("list") == std::vector<std::string>{"1", "x"});
    CHECK(problems.size() == 5);
}

TEST_CASE("a Reader over a non-object finds nothing and throws nothing") {
    for (const char* text : {"[]", "3", "\"s\"", "null", "true"}) {
        const Json doc = Json::parse(text);
        std::vector<std::string> problems;
        const Reader r{doc, problems, ""};
        CHECK_NOTHROW(CHECK_FALSE(r.find("k")));
        CHECK_FALSE(r.u64("k"));
        CHECK(r.string("k").empty());
    }
}
