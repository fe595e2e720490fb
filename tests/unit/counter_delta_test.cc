#include "libstallscope/model/counter_delta.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using stallscope::counter_delta;

TEST_CASE("a counter that grows gives its delta and per-second rate") {
    auto d = counter_delta(1000, 1600, 2.0);
    REQUIRE(d);
    CHECK(d->delta == 600);
    CHECK(d->per_second == doctest::Approx(300.0));
    CHECK_FALSE(d->reset);
    CHECK_FALSE(d->wrapped);
}

TEST_CASE("a 32-bit counter that passes 2^32 wraps instead of going negative") {
    const std::uint64_t top = std::numeric_limits<std::uint32_t>::max();
    auto d = counter_delta(top - 9, 5, 1.0);
    REQUIRE(d);
    CHECK(d->wrapped);
    CHECK(d->delta == 15);  // 9 to the top, 1 to pass zero, 5 after
}

TEST_CASE("a 64-bit counter near 2^64 wraps") {
    const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
    auto d = counter_delta(top - 1, 2, 1.0);
    REQUIRE(d);
    CHECK(d->wrapped);
    CHECK(d->delta == 4);
}

TEST_CASE("a counter that drops from the middle of its range is a reset, never a negative rate") {
    auto d = counter_delta(5'000'000, 40, 10.0);
    REQUIRE(d);
    CHECK(d->reset);
    CHECK_FALSE(d->wrapped);
    CHECK(d->delta == 40);
    CHECK(d->per_second == doctest::Approx(4.0));
}

TEST_CASE("missing on either side, or a non-positive interval, gives no delta") {
    CHECK_FALSE(counter_delta(std::nullopt, 5, 1.0));
    CHECK_FALSE(counter_delta(5, std::nullopt, 1.0));
    CHECK_FALSE(counter_delta(1, 2, 0.0));
    CHECK_FALSE(counter_delta(1, 2, -1.0));
}
