// The replaced global operator new: counts calls, then allocates as the default one does.
#include "bench/alloc_count.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::uint64_t> g_calls{0};
}  // namespace

namespace stallscope::bench {
std::uint64_t operator_new_calls() {
    return g_calls.load(std::memory_order_relaxed);
}
}  // namespace stallscope::bench

void* operator new(std::size_t size) {
    g_calls.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
    return ::operator new(size);
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
