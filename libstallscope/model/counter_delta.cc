#include "libstallscope/model/counter_delta.h"

#include <limits>

namespace stallscope {
namespace {

// How close to the top of its range a counter must have been for a decrease to count as a wrap.
// A quarter of the 32-bit range: counters that wrap (IB PMA 32-bit counters, 32-bit NIC stats) move by
// far less than 2^30 between samples, while a reset typically falls to near zero from anywhere.
constexpr std::uint64_t kWrapWindow = 1ULL << 30;
constexpr std::uint64_t kMax32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();

}  // namespace

std::optional<CounterDelta> counter_delta(std::optional<std::uint64_t> previous,
                                          std::optional<std::uint64_t> current, double interval_seconds) {
    if (!previous || !current || !(interval_seconds > 0)) return std::nullopt;
    CounterDelta d;
    const std::uint64_t prev = *previous, cur = *current;
    if (cur >= prev) {
        d.delta = cur - prev;
    } else if (prev <= kMax32 && prev > kMax32 - kWrapWindow && cur < kWrapWindow) {
        d.delta = (kMax32 - prev) + cur + 1;
        d.wrapped = true;
    } else if (prev > kMax64 - kWrapWindow && cur < kWrapWindow) {
        d.delta = (kMax64 - prev) + cur + 1;
        d.wrapped = true;
    } else {
        d.delta = cur;
        d.reset = true;
    }
    d.per_second = static_cast<double>(d.delta) / interval_seconds;
    return d;
}

}  // namespace stallscope
