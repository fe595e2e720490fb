// `stallscope watch`: one frame of a running job's state across its nodes, as text that fits a terminal
// (any job size: the worst nodes, the reasons grouped across nodes, a hang banner naming the culprit when
// evidence files exist) or as one JSON line for tools.
#pragma once

#include <set>
#include <string>

#include "libstallscope/hang/hang_merge.h"
#include "libstallscope/job/job_report.h"

namespace stallscope::cli {

struct WatchFrame {
    std::string dir;
    double now = 0;            // wall clock of the frame (epoch seconds)
    double build_seconds = 0;  // what reading the recordings took
    const JobReport* report = nullptr;
    const JobHangEvidence* hang = nullptr;
    std::set<std::string> new_reasons;  // codes not in the previous frame: marked '+'
    std::size_t top_nodes = 20;         // worst nodes in the JSON line
};

struct WatchSize {
    int rows = 50, columns = 160;
};

std::string watch_text(const WatchFrame& frame, const WatchSize& size);
Json watch_json(const WatchFrame& frame);

// The reason codes of a frame, for the next frame's new_reasons.
std::set<std::string> reason_codes(const JobReport& report);

}  // namespace stallscope::cli
