// The progress line long runs over many recordings draw on stderr (`replay`, `report`, `html`):
//   [#########.....................]  31%  412.5 MiB read  12/38 recordings  ETA 0:12
// redrawn in place, erased before results are printed, and nothing at all when stderr is not a terminal
// (a cron job, a pipe to a file, the epilog).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace stallscope::cli {

class ProgressBar {
  public:
    // `items`: what the count is of ("files", "recordings").
    explicit ProgressBar(const char* items);
    bool active() const { return active_; }
    // The fraction done is bytes_done / bytes_total when the total is known (> 0), else
    // items_done / items_total; the ETA extrapolates it from the time since construction.
    void draw(std::uint64_t bytes_done, std::uint64_t bytes_total, std::size_t items_done,
              std::size_t items_total);
    void clear();  // erases the line, if one was drawn

  private:
    const char* items_;
    bool active_ = false, drawn_ = false;
    std::chrono::steady_clock::time_point start_;
};

// A JobReportOptions::progress / SeriesProgress callback drawing on `bar` (item counts, bytes read).
inline std::function<void(std::size_t, std::size_t, std::uint64_t)> progress_drawer(ProgressBar& bar) {
    return
        [&bar](std::size_t done, std::size_t total, std::uint64_t bytes) { bar.draw(bytes, 0, done, total); };
}

}  // namespace stallscope::cli
