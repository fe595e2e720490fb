#include "libstallscope/sources/deadline_source.h"

#include <doctest/doctest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <thread>

using namespace stallscope;

namespace {

// A GPU source whose calls take `delay` (a wedged driver when the delay exceeds the deadline).
class SlowGpuSource final : public Source {
  public:
    explicit SlowGpuSource(std::shared_ptr<std::atomic<int>> delay_ms) : delay_ms_(std::move(delay_ms)) {}
    std::string_view name() const override { return "nvidia"; }
    void sample(Snapshot& s) override {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_->load()));
        if (delay_ms_->load() < 0) throw std::runtime_error("driver said no");
        Gpu g;
        g.index = static_cast<int>(s.gpus.size());
        g.vendor = "nvidia";
        s.gpus.push_back(g);
        s.warnings.push_back("nvml: field x not supported");
    }

  private:
    std::shared_ptr<std::atomic<int>> delay_ms_;
};

// Records the thread each sample ran on; `blocking` says what may_block() answers.
class ThreadRecordingSource final : public Source {
  public:
    ThreadRecordingSource(bool blocking, std::thread::id* ran_on) : blocking_(blocking), ran_on_(ran_on) {}
    std::string_view name() const override { return "nvml"; }
    bool may_block() const override { return blocking_; }
    void sample(Snapshot& s) override {
        *ran_on_ = std::this_thread::get_id();
        s.warnings.push_back("nvidia: no NVIDIA GPU telemetry");
        if (s.host == "throw") throw std::runtime_error("no");
    }

  private:
    bool blocking_;
    std::thread::id* ran_on_;
};

// A source that may block until its first sample has run (as the NVIDIA source before it has looked for
// a driver) and never after it (it found none).
class DriverlessSource final : public Source {
  public:
    std::string_view name() const override { return "nvml"; }
    bool may_block() const override { return !looked_; }
    void sample(Snapshot& s) override {
        looked_ = true;
        s.warnings.push_back("nvidia: no NVIDIA GPU telemetry");
    }

  private:
    bool looked_ = false;
};

std::ptrdiff_t threads_of_this_process() {
    return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                         std::filesystem::directory_iterator{});
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("a source that answers in time is merged into the sample, after what earlier sources found") {
    auto delay = std::make_shared<std::atomic<int>>(0);
    auto source = with_deadline(std::make_unique<SlowGpuSource>(delay), 1.0);
    Snapshot s;
    Gpu amd;
    amd.vendor = "amd";
    s.gpus.push_back(amd);
    source->sample(s);
    REQUIRE(s.gpus.size() == 2);
    CHECK(s.gpus[0].vendor == "amd");
    CHECK(s.gpus[1].vendor == "nvidia");
    CHECK(s.warnings.size() == 1);
    CHECK(s.collector_failures.empty());
}

TEST_CASE("a hung driver call costs at most the deadline, is named, and sampling resumes when it returns") {
    auto delay = std::make_shared<std::atomic<int>>(1500);
    auto source = with_deadline(std::make_unique<SlowGpuSource>(delay), 0.2);
    Snapshot first;
    auto t = std::chrono::steady_clock::now();
    source->sample(first);
    CHECK(seconds_since(t) < 0.5);
    CHECK(first.gpus.empty());
    REQUIRE(first.collector_failures.count("nvidia"));
    CHECK(first.collector_failures["nvidia"].find("timed out after 0.2 s") == 0);

    Snapshot second;  // the first call is still stuck: skipped at once
    t = std::chrono::steady_clock::now();
    source->sample(second);
    CHECK(seconds_since(t) < 0.1);
    CHECK(second.collector_failures["nvidia"].find("still blocked") == 0);

    delay->store(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the stuck call returns meanwhile
    Snapshot third;
    source->sample(third);
    CHECK(third.collector_failures.empty());
    CHECK(third.gpus.size() == 1);
}

TEST_CASE("an exception in the source is a crashed collector, not a crashed sampler") {
    auto delay = std::make_shared<std::atomic<int>>(-1);
    auto source = with_deadline(std::make_unique<SlowGpuSource>(delay), 1.0);
    Snapshot s;
    source->sample(s);
    CHECK(s.collector_failures["nvidia"] == "crashed: driver said no");
}

TEST_CASE("destroying a source stuck in a driver call does not hang") {
    auto delay = std::make_shared<std::atomic<int>>(3000);
    auto t = std::chrono::steady_clock::now();
    {
        auto source = with_deadline(std::make_unique<SlowGpuSource>(delay), 0.1);
        Snapshot s;
        source->sample(s);
    }
    CHECK(seconds_since(t) < 1.0);
}

TEST_CASE("a source that says it cannot block runs on the caller's thread, with the same result") {
    for (const bool blocking : {true, false}) {
        CAPTURE(blocking);
        std::thread::id ran_on;
        auto source = with_deadline(std::make_unique<ThreadRecordingSource>(blocking, &ran_on), 1.0);
        Snapshot s;
        source->sample(s);
        CHECK((ran_on == std::this_thread::get_id()) == !blocking);
        CHECK(s.warnings == std::vector<std::string>{"nvidia: no NVIDIA GPU telemetry"});
        CHECK(s.collector_failures.empty());
        Snapshot crashing;
        crashing.host = "throw";
        source->sample(crashing);
        CHECK(crashing.collector_failures.at("nvml") == "crashed: no");
    }
}

// Records whether the thread it samples on blocks SIGTERM.
class SignalMaskRecordingSource final : public Source {
  public:
    explicit SignalMaskRecordingSource(int* sigterm_blocked) : sigterm_blocked_(sigterm_blocked) {}
    std::string_view name() const override { return "nvml"; }
    void sample(Snapshot&) override {
        sigset_t current;
        pthread_sigmask(SIG_BLOCK, nullptr, &current);
        *sigterm_blocked_ = sigismember(&current, SIGTERM);
    }

  private:
    int* sigterm_blocked_;
};

TEST_CASE("the worker thread never takes the helper's stop signals; the caller's mask is left as it was") {
    // A SIGTERM taken by a worker reached the main thread's stop flag too late (util/stop_signals.h).
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, nullptr, &before);
    REQUIRE(sigismember(&before, SIGTERM) == 0);  // the test runner's main thread takes SIGTERM
    int sigterm_blocked = -1;
    auto source = with_deadline(std::make_unique<SignalMaskRecordingSource>(&sigterm_blocked), 5.0);
    Snapshot s;
    source->sample(s);
    CHECK(s.collector_failures.empty());
    CHECK(sigterm_blocked == 1);  // on the worker
    sigset_t after;
    pthread_sigmask(SIG_BLOCK, nullptr, &after);
    CHECK(sigismember(&after, SIGTERM) == 0);
    CHECK(sigismember(&after, SIGHUP) == sigismember(&before, SIGHUP));
}

TEST_CASE(
    "a source that can no longer block leaves no thread behind: every read of the sampler stays cheap") {
    // With a second thread the kernel refcounts the file at every read of every source; the helper on a
    // node without a GPU driver should be one thread, as it was before the driver was looked for. Counted
    // in a child process: a thread another test detached (a worker stuck in a slow call) must not count.
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int failed = 0;  // one bit per expectation, reported through the exit status
        const auto before = threads_of_this_process();
        auto source = with_deadline(std::make_unique<DriverlessSource>(), 1.0);
        if (threads_of_this_process() != before) failed |= 1;  // nothing started before it is needed
        Snapshot first, second;
        source->sample(first);   // may block: handed to a worker
        source->sample(second);  // cannot block any more: the worker is gone, the sample runs here
        if (first.warnings.size() != 1 || second.warnings.size() != 1) failed |= 2;
        if (threads_of_this_process() != before) failed |= 4;
        // A source that may block keeps its worker between samples (a hung call must stay bounded).
        std::thread::id ran_on;
        auto blocking = with_deadline(std::make_unique<ThreadRecordingSource>(true, &ran_on), 1.0);
        Snapshot s;
        blocking->sample(s);
        blocking->sample(s);
        if (threads_of_this_process() != before + 1 || ran_on == std::this_thread::get_id()) failed |= 8;
        ::_exit(failed);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    const int failed = WEXITSTATUS(status);
    CHECK_MESSAGE((failed & 1) == 0, "a worker thread was started before any sample needed it");
    CHECK_MESSAGE((failed & 2) == 0, "a sample lost the source's warning");
    CHECK_MESSAGE((failed & 4) == 0, "the worker outlived the source's last chance to block");
    CHECK_MESSAGE((failed & 8) == 0, "a source that may block lost its worker");
}
