// A running job read as a running job (find_running_recordings, job_report.h): `report` on a job whose
// helpers are still sampling gives what is known so far, labelled provisional, not recording_incomplete.
#include <algorithm>
#include <set>
#include <string>

#include "libstallscope/job/job_report.h"

namespace stallscope {
namespace {

// A helper flushes a sample every interval; three missed intervals (plus slack for a slow shared file
// system) and it is taken for dead. The default interval (record --interval-seconds) when a recording has
// too few samples to tell its own.
constexpr double kMissedIntervals = 3;
constexpr double kSlackSeconds = 10;
constexpr double kDefaultIntervalSeconds = 30;

}  // namespace

void find_running_recordings(JobReport& job, double now) {
    std::set<std::string> running;
    for (auto& n : job.nodes) {
        // Only a timeline with samples and no verdict anywhere: the helper writes its verdict when it stops.
        if (n.verdict_recorded || n.verdict.samples <= 0 || n.timeline_path.empty()) continue;
        const double interval = n.verdict.samples > 1 ? n.verdict.duration_seconds() / (n.verdict.samples - 1)
                                                      : kDefaultIntervalSeconds;
        // The last sample's time, not the file's mtime: a timeline copied elsewhere is new on disk but
        // not running. Compute nodes and the node reading this keep their clocks in step (NTP).
        if (now - n.verdict.end_time > kMissedIntervals * std::max(interval, 1.0) + kSlackSeconds) continue;
        n.running = true;
        n.incomplete = false;
        running.insert(n.host);
    }
    job.running_nodes.assign(running.begin(), running.end());
}

}  // namespace stallscope
