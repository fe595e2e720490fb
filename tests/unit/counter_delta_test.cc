#include "libstallscope/model/counter_delta.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
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

// counter_delta_into skips the division for a counter that stood still: its rate must still be the bits
// the division gives (+0.0, not -0.0), and every other rate the division's own, at any interval > 0.
TEST_CASE("per_second is delta / interval to the bit, a counter that stood still included") {
    const double intervals[] = {
        std::numeric_limits<double>::denorm_min(), 1e-300, 0.001, 0.999, 1.0, 3.0, 1e300,
        std::numeric_limits<double>::infinity()};
    const std::uint64_t deltas[] = {0, 1, 3, 600, 1ULL << 40, std::numeric_limits<std::uint64_t>::max()};
    for (const double dt : intervals)
        for (const std::uint64_t delta : deltas) {
            CAPTURE(dt);
            CAPTURE(delta);
            stallscope::CounterDelta d;
            d.per_second = -1;  // a stale value in a reused cell
            stallscope::counter_delta_into(0, delta, dt, d);
            REQUIRE(d.delta == delta);
            const double expected = static_cast<double>(delta) / dt;
            CHECK(std::bit_cast<std::uint64_t>(d.per_second) == std::bit_cast<std::uint64_t>(expected));
            CHECK_FALSE(std::signbit(d.per_second));
        }
}
