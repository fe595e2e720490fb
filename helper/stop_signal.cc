#include "helper/stop_signal.h"

#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cmath>

#include "libstallscope/util/stop_signals.h"

namespace stallscope::cli {
namespace {

volatile sig_atomic_t g_stop = 0;

void on_stop(int) {
    g_stop = 1;
}

}  // namespace

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking sleep must return at once
    for (int sig : kStopSignals) sigaction(sig, &sa, nullptr);
    // Unblocked here, in the main thread; the library's threads start with them blocked
    // (StopSignalsBlockedForNewThreads), so this thread's handler is the one that takes them.
    const sigset_t set = stop_signal_set();
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

bool stop_requested() {
    return g_stop != 0;
}

void sleep_until(double deadline) {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(std::floor(deadline));
    ts.tv_nsec = static_cast<long>((deadline - std::floor(deadline)) * 1e9);
    while (!g_stop) {
        const int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
        if (rc == 0 || rc != EINTR) return;
    }
}

}  // namespace stallscope::cli
