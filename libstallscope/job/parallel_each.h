// The recordings of a job loaded or replayed on every core (`report`, `html`, `compare`): each index once,
// on a pool of threads, with an optional progress callback on the calling thread.
#pragma once

#include <cstddef>
#include <functional>

namespace stallscope {

// Runs work(i) for every i in [0, count) on min(threads, count) threads (threads 0: one per core) and
// returns when all are done. Without `progress` the calling thread is one of the workers; with it, the
// calling thread only calls progress(done): at once, about every 200 ms, and when all are done. work must
// not throw (an exception escaping a thread ends the process): catch and record it per index.
void parallel_each(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& work,
                   const std::function<void(std::size_t done)>& progress = {});

}  // namespace stallscope
