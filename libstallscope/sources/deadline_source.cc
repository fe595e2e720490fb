#include "libstallscope/sources/deadline_source.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "libstallscope/util/stop_signals.h"

namespace stallscope {
namespace {

// State shared with the worker thread. Owned by a shared_ptr so a worker stuck in a driver call can be
// detached at exit without touching freed memory.
struct Shared {
    std::mutex mutex;
    std::condition_variable wake;
    std::unique_ptr<Source> inner;
    Snapshot scratch;
    bool job = false, busy = false, quit = false;
    std::string crash;
};

// The source's sample(); what it threw as a collector failure text, "" when it did not.
std::string sample_guarded(Source& source, Snapshot& snapshot) {
    try {
        source.sample(snapshot);
    } catch (const std::exception& e) {
        return std::string("crashed: ") + e.what();
    } catch (...) {
        return "crashed: unknown exception";
    }
    return "";
}

void worker_loop(std::shared_ptr<Shared> s) {
    std::unique_lock lock(s->mutex);
    for (;;) {
        s->wake.wait(lock, [&] { return s->job || s->quit; });
        if (s->quit) return;
        s->job = false;
        Snapshot scratch = std::move(s->scratch);
        lock.unlock();
        std::string crash = sample_guarded(*s->inner, scratch);
        lock.lock();
        s->scratch = std::move(scratch);
        s->crash = std::move(crash);
        s->busy = false;
        s->wake.notify_all();
    }
}

class DeadlineSource final : public Source {
  public:
    // The worker starts with the first sample that needs it, not here: a source that never may block
    // (no GPU driver on the node) leaves the process with one thread (see retire_idle_worker).
    DeadlineSource(std::unique_ptr<Source> inner, double deadline)
        : shared_(std::make_shared<Shared>()), deadline_(deadline) {
        name_ = std::string(inner->name());
        shared_->inner = std::move(inner);
    }

    ~DeadlineSource() override {
        if (!worker_.joinable()) return;
        {
            std::lock_guard lock(shared_->mutex);
            shared_->quit = true;
            shared_->wake.notify_all();
            if (shared_->busy) {
                // Stuck in the driver: joining would hang the process's exit. The thread owns `shared_`.
                worker_.detach();
                return;
            }
        }
        worker_.join();
    }

    std::string_view name() const override { return name_; }

    void sample(Snapshot& snapshot) override {
        std::unique_lock lock(shared_->mutex);
        if (shared_->busy) {
            snapshot.collector_failures[name_] = "still blocked in the previous call (hung driver?); skipped";
            return;
        }
        if (!shared_->inner->may_block()) {  // the worker is idle (not busy): the source is ours now
            retire_idle_worker(lock);
            if (std::string crash = sample_guarded(*shared_->inner, snapshot); !crash.empty())
                snapshot.collector_failures[name_] = std::move(crash);
            return;
        }
        if (!worker_.joinable()) {
            shared_->quit = false;
            const StopSignalsBlockedForNewThreads stop_signals_to_the_main_thread;
            worker_ = std::thread(worker_loop, shared_);
        }
        // The source sees what earlier sources found (the NVIDIA source checks for AMD GPUs).
        shared_->scratch = Snapshot{};
        shared_->scratch.time = snapshot.time;
        shared_->scratch.host = snapshot.host;
        shared_->scratch.context = snapshot.context;
        shared_->scratch.gpus = snapshot.gpus;
        shared_->job = shared_->busy = true;
        shared_->wake.notify_all();
        if (!shared_->wake.wait_for(lock, std::chrono::duration<double>(deadline_),
                                    [&] { return !shared_->busy; })) {
            char why[96];
            std::snprintf(why, sizeof why, "timed out after %.1f s (hung driver?)", deadline_);
            snapshot.collector_failures[name_] = why;
            return;
        }
        Snapshot& got = shared_->scratch;
        snapshot.gpus = std::move(got.gpus);
        snapshot.xid_events.insert(snapshot.xid_events.end(), got.xid_events.begin(), got.xid_events.end());
        snapshot.warnings.insert(snapshot.warnings.end(), got.warnings.begin(), got.warnings.end());
        for (auto& [k, v] : got.collector_failures) snapshot.collector_failures[k] = v;
        if (!shared_->crash.empty()) snapshot.collector_failures[name_] = shared_->crash;
    }

  private:
    // Stops the idle worker of a source that can no longer block: while a second thread lives, the
    // kernel takes and drops a reference on the file at every read of every source (a shared fd table),
    // ~9 % of the ~800 sysfs reads of a sample on a big node (bench/RESULTS.md). Called with the lock
    // held and the worker idle, so the join returns at once.
    void retire_idle_worker(std::unique_lock<std::mutex>& lock) {
        if (!worker_.joinable()) return;
        shared_->quit = true;
        shared_->wake.notify_all();
        lock.unlock();
        worker_.join();
        lock.lock();
    }

    std::shared_ptr<Shared> shared_;
    std::thread worker_;
    std::string name_;
    double deadline_;
};

}  // namespace

std::unique_ptr<Source> with_deadline(std::unique_ptr<Source> inner, double deadline_seconds) {
    return std::make_unique<DeadlineSource>(std::move(inner), deadline_seconds);
}

}  // namespace stallscope
