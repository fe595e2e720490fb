// How many times this process called the global operator new (replaced in alloc_count.cc, linked only
// into the benches that report allocations per sample). malloc from C code (zstd, libc) is not counted.
#pragma once

#include <cstdint>

namespace stallscope::bench {

std::uint64_t operator_new_calls();

}  // namespace stallscope::bench
