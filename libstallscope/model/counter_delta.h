// Delta of one cumulative counter between two reads. Kept in one tested place so wrap and reset
// handling is never re-invented per source (dynolog's `uint64_t diff < 0` is the cautionary tale).
#pragma once

#include <cstdint>
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
std::optional<CounterDelta> counter_delta(std::optional<std::uint64_t> previous,
                                          std::optional<std::uint64_t> current, double interval_seconds);

}  // namespace stallscope
