// Delta of one cumulative counter between two reads. Kept in one tested place so wrap and reset
// handling is never re-invented per source (dynolog's `uint64_t diff < 0` is the cautionary tale).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace stallscope {

struct CounterDelta {
    std::uint64_t delta = 0;
    double per_second = 0;
    bool reset = false;    // the counter went down and was not a plausible wrap: delta counts from 0
    bool wrapped = false;  // the counter passed 2^32 or 2^64 and started again
};

// previous/current are raw reads; interval_seconds > 0. Returns nullopt when either read is missing.
// A decrease is a 32-bit wrap when previous was above 2^32 - 2^30 (near the top of a 32-bit counter)
// and current is small, a 64-bit wrap likewise near 2^64; any other decrease is a reset (driver reload,
// port reset, `perfquery -R`), and the delta is then `current` (what accrued since the reset).
// How close to the top of its range a counter must have been for a decrease to count as a wrap.
// A quarter of the 32-bit range: counters that wrap (IB PMA 32-bit counters, 32-bit NIC stats) move by
// far less than 2^30 between samples, while a reset typically falls to near zero from anywhere.
inline constexpr std::uint64_t kCounterWrapWindow = 1ULL << 30;

// The same for two present reads, written straight into `d` (all four fields): the per-sample path
// fills its row in place with it, without an optional copied through the stack.
inline void counter_delta_into(std::uint64_t prev, std::uint64_t cur, double interval_seconds,
                               CounterDelta& d) {
    constexpr std::uint64_t kMax32 = std::numeric_limits<std::uint32_t>::max();
    constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
    bool wrapped = false, reset = false;
    std::uint64_t delta;
    if (cur >= prev) {
        delta = cur - prev;
    } else if (prev <= kMax32 && prev > kMax32 - kCounterWrapWindow && cur < kCounterWrapWindow) {
        delta = (kMax32 - prev) + cur + 1;
        wrapped = true;
    } else if (prev > kMax64 - kCounterWrapWindow && cur < kCounterWrapWindow) {
        delta = (kMax64 - prev) + cur + 1;
        wrapped = true;
    } else {
        delta = cur;
        reset = true;
    }
    d.delta = delta;
    // Most counters of a node stand still in most intervals (error, drop and retry counters): their
    // rate is 0 / interval, which is +0.0 for any interval > 0, without the division (a divsd per
    // counter was the largest part of this function on a DGX: ~370 counters a sample).
    d.per_second = delta == 0 ? 0.0 : static_cast<double>(delta) / interval_seconds;
    d.reset = reset;
    d.wrapped = wrapped;
}

inline std::optional<CounterDelta> counter_delta(std::optional<std::uint64_t> previous,
                                                 std::optional<std::uint64_t> current,
                                                 double interval_seconds) {
    if (!previous || !current || !(interval_seconds > 0)) return std::nullopt;
    CounterDelta d;
    counter_delta_into(*previous, *current, interval_seconds, d);
    return d;
}

}  // namespace stallscope
