// Numbers no other call returns in this process (from 1 up; 0 is left for "none"): ids that stay valid
// only while their owner lives, checked by value where an address could have been reused
// (SnapshotShape::fresh, VerdictAccumulator's id).
#pragma once

#include <atomic>
#include <cstdint>

namespace stallscope {

inline std::uint64_t process_unique_id() {
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace stallscope
