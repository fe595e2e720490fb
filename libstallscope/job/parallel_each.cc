#include "libstallscope/job/parallel_each.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace stallscope {

void parallel_each(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& work,
                   const std::function<void(std::size_t done)>& progress) {
    std::atomic<std::size_t> next{0};
    std::size_t finished = 0;  // under `mutex`
    std::mutex mutex;
    std::condition_variable changed;
    auto worker = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < count;) {
            work(i);
            {
                std::lock_guard lock(mutex);
                ++finished;
            }
            changed.notify_all();
        }
    };
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t pool_size = std::min<std::size_t>(threads ? threads : cores, count);
    std::vector<std::thread> pool;
    for (std::size_t t = progress ? 0 : 1; t < pool_size; ++t) pool.emplace_back(worker);
    if (progress) {
        for (std::size_t seen = 0; seen < count;) {
            progress(seen);
            std::unique_lock lock(mutex);
            changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return finished == count; });
            seen = finished;
        }
        progress(count);
    } else {
        worker();
    }
    for (auto& t : pool) t.join();
}

}  // namespace stallscope
