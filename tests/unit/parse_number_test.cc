#include "libstallscope/util/parse_number.h"

#include <doctest/doctest.h>

#include <string>

using namespace stallscope;

TEST_CASE("sysfs counter text parses with its trailing newline") {
    CHECK(parse_u64("123456\n") == 123456u);
    CHECK(parse_u64("  0 ") == 0u);
    CHECK(parse_u64("18446744073709551615") == 18446744073709551615ull);
    CHECK(parse_u64("0x1f", true) == 31u);
}

TEST_CASE("garbage counters are rejected, never read as 0") {
    CHECK_FALSE(parse_u64(""));
    CHECK_FALSE(parse_u64("\n"));
    CHECK_FALSE(parse_u64("N/A (no PMA)\n"));
    CHECK_FALSE(parse_u64("-1"));
    CHECK_FALSE(parse_u64("+1"));
    CHECK_FALSE(parse_u64("18446744073709551616"));  // 2^64
    CHECK_FALSE(parse_u64("12abc"));
    CHECK_FALSE(parse_u64("1.5"));
    CHECK_FALSE(
        parse_u64(std::string("12\0"
                              "3",
                              4)));
    CHECK_FALSE(parse_u64("0x1f"));  // hex only when asked for
}

TEST_CASE("the warning says why a counter was rejected") {
    CHECK(describe_bad_counter("") == "empty");
    CHECK(describe_bad_counter("-5\n").find("negative") == 0);
    CHECK(describe_bad_counter("99999999999999999999999").find("out of range") == 0);
    CHECK(describe_bad_counter(std::string("\x01\x02\xff", 3)) == "binary data");
    CHECK(describe_bad_counter("N/A (no PMA)").find("not a number") == 0);
}

TEST_CASE("decimal gauges parse strictly") {
    CHECK(parse_double("0.52") == doctest::Approx(0.52));
    CHECK(parse_double("12") == doctest::Approx(12.0));
    CHECK_FALSE(parse_double("nan"));
    CHECK_FALSE(parse_double("1.2.3"));
    CHECK_FALSE(parse_double(""));
}
