#include "helper/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace stallscope::cli {

ProgressBar::ProgressBar(const char* items)
    : items_(items), active_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

void ProgressBar::draw(std::uint64_t bytes_done, std::uint64_t bytes_total, std::size_t items_done,
                       std::size_t items_total) {
    if (!active_) return;
    const double fraction =
        bytes_total > 0   ? static_cast<double>(bytes_done) / static_cast<double>(bytes_total)
        : items_total > 0 ? static_cast<double>(items_done) / static_cast<double>(items_total)
                          : 0;
    const double done = std::clamp(fraction, 0.0, 1.0);
    char bar[31];
    const int filled = static_cast<int>(done * 30);
    for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = done > 0.01 ? elapsed * (1 - done) / done : 0;
    char bytes[48] = "";
    if (bytes_total > 0)
        std::snprintf(bytes, sizeof bytes, "  %.1f of %.1f MiB", static_cast<double>(bytes_done) / 1048576,
                      static_cast<double>(bytes_total) / 1048576);
    else if (bytes_done > 0)
        std::snprintf(bytes, sizeof bytes, "  %.1f MiB read", static_cast<double>(bytes_done) / 1048576);
    std::fprintf(stderr, "\r[%s] %3.0f%%%s  %zu/%zu %s  ETA %d:%02d ", bar, done * 100, bytes, items_done,
                 items_total, items_, static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressBar::clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r%100s\r", "");
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace stallscope::cli
