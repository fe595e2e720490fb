#pragma once
// The signals that ask the helper to stop (helper/stop_signal.cc handles them in the main thread), and a
// guard that keeps them off the threads the library starts.

#include <pthread.h>
#include <signal.h>

namespace stallscope {

// SIGTERM is what the plugin sends at a step's end (then SIGCONT, for a helper that was stopped);
// SIGINT, SIGHUP and SIGUSR1 stop an interactive run.
inline constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};

inline sigset_t stop_signal_set() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kStopSignals) sigaddset(&set, sig);
    return set;
}

// Blocks the stop signals in the calling thread while it lives; a thread started meanwhile (std::thread,
// std::async) inherits the blocked mask and keeps it, so only the main thread ever takes them. Why: a
// process-directed signal goes to any thread that does not block it. A SIGTERM that a worker took set the
// stop flag a moment after the main thread, woken by the SIGCONT that follows it, had already looked:
// the fault test of a SIGSTOPped helper then saw its gap written as an ordinary gap, not one "before the
// stop" (seen once on a loaded 2-core VM, 2026-11-28).
class StopSignalsBlockedForNewThreads {
  public:
    StopSignalsBlockedForNewThreads() {
        const sigset_t stop = stop_signal_set();
        pthread_sigmask(SIG_BLOCK, &stop, &previous_);
    }
    ~StopSignalsBlockedForNewThreads() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
    StopSignalsBlockedForNewThreads(const StopSignalsBlockedForNewThreads&) = delete;
    StopSignalsBlockedForNewThreads& operator=(const StopSignalsBlockedForNewThreads&) = delete;

  private:
    sigset_t previous_;
};

}  // namespace stallscope
