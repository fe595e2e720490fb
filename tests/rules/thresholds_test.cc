#include "libstallscope/rules/thresholds.h"

#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace stallscope;

TEST_CASE("an empty config keeps every default") {
    std::string error;
    auto t = parse_thresholds("", "empty.conf", error);
    REQUIRE(t);
    CHECK(t->cnp_handled_per_s == 500);
    CHECK(t->min_step_seconds == 30);
}

TEST_CASE("key = value lines override defaults; comments and blank lines are ignored") {
    std::string error;
    auto t = parse_thresholds(
        "# comment\n\n  cnp_handled_per_s = 50   # trailing comment\nhang_min_samples=3\n", "x.conf", error);
    REQUIRE(t);
    CHECK(t->cnp_handled_per_s == 50);
    CHECK(t->hang_min_samples == 3);
    CHECK(t->ecn_marked_per_s == 500);  // untouched
}

TEST_CASE("an unknown key is an error naming file and line") {
    std::string error;
    CHECK_FALSE(parse_thresholds("cnp_handled_per_s = 1\ncnp_per_second = 2\n", "rules.conf", error));
    CHECK(error == "rules.conf:2: unknown key 'cnp_per_second'");
}

TEST_CASE("bad values are errors naming file, line and the accepted range") {
    std::string error;
    CHECK_FALSE(parse_thresholds("gpu_util_low_pct = lots\n", "r.conf", error));
    CHECK(error.find("r.conf:1: bad value 'lots' for gpu_util_low_pct") == 0);
    CHECK_FALSE(parse_thresholds("\ngpu_util_low_pct = 150\n", "r.conf", error));
    CHECK(error.find("r.conf:2:") == 0);
    CHECK(error.find("[0, 100]") != std::string::npos);
    CHECK_FALSE(parse_thresholds("cnp_handled_per_s = -1\n", "r.conf", error));
    CHECK_FALSE(parse_thresholds("cnp_handled_per_s =\n", "r.conf", error));
    CHECK_FALSE(parse_thresholds("cnp_handled_per_s 5\n", "r.conf", error));
    CHECK(error.find("expected `key = value`") != std::string::npos);
    CHECK_FALSE(parse_thresholds("cnp_handled_per_s = 5\ncnp_handled_per_s = 6\n", "r.conf", error));
    CHECK(error == "r.conf:2: key 'cnp_handled_per_s' given twice");
}

TEST_CASE("a missing file is an error naming the path") {
    std::string error;
    CHECK_FALSE(load_thresholds("/nonexistent/stallscope-rules.conf", error));
    CHECK(error.find("/nonexistent/stallscope-rules.conf: cannot open") == 0);
}

TEST_CASE("thresholds_as_pairs lists every key once with its value") {
    Thresholds t;
    t.psi_io_full_pct = 33;
    const auto pairs = thresholds_as_pairs(t);
    CHECK(pairs.size() == threshold_keys().size());
    std::set<std::string> names;
    for (const auto& [k, v] : pairs) {
        names.insert(k);
        if (k == "psi_io_full_pct") CHECK(v == 33);
    }
    CHECK(names.size() == pairs.size());
}

TEST_CASE("contrib/stallscope-rules.conf loads as-is, documents every key and states the defaults") {
    const std::string path = std::string(STALLSCOPE_SOURCE_DIR) + "/contrib/stallscope-rules.conf";
    std::string error;
    auto t = load_thresholds(path, error);
    REQUIRE_MESSAGE(t, error);
    const auto loaded = thresholds_as_pairs(*t);
    const auto defaults = thresholds_as_pairs(Thresholds{});
    REQUIRE(loaded.size() == defaults.size());
    for (size_t i = 0; i < loaded.size(); ++i) {
        INFO(loaded[i].first);
        CHECK(loaded[i].second == defaults[i].second);
    }
    // every key appears as a `key = value` line (so the file is the complete documentation)
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    for (const auto& k : threshold_keys()) {
        INFO(k.name);
        CHECK(text.str().find(std::string("\n") + k.name + " = ") != std::string::npos);
    }
}
