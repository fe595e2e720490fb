// The recording helper's side of the hang evidence (doc/hang-evidence.md §4): once per hang episode the
// helper starts a bounded capture on its own thread and, when the result arrives, appends a
// `hang_evidence` event to the timeline. Kept out of cli_record.cc so the sampling loop reads as before:
// one call per sample, one at the stop.
//
// The capture must never delay or fail the job: start() returns at once, the result is only polled, the
// stop gives it at most a second, and whatever goes wrong (no job cgroup, an unwritable dir, an exception
// in the capture) becomes a warning or the event's text, never an exception out of `record`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libstallscope/hang/hang_capture.h"
#include "libstallscope/util/roots.h"

namespace stallscope::cli {

class RecordHangHook {
  public:
    using Append = std::function<void(const Json&)>;
    // `step` and `host` are already file-name safe (the timeline's stem parts).
    RecordHangHook(Roots roots, std::string step, std::string host);

    // Once per sample, after the profile: starts a capture on the first sample of a hang episode (into
    // `dir`, where the timeline is now), and appends the event of a finished capture.
    void after_sample(const Snapshot& sample, const Profile& profile, const std::string& dir,
                      const Append& append);
    // The stop path, before the verdict: up to `seconds` for a running capture to end, then its event.
    void at_stop(double seconds, const Append& append);

    // Problems worth a line in the verdict's warnings (a capture not started, one that failed).
    const std::vector<std::string>& warnings() const { return warnings_; }

  private:
    std::vector<pid_t> job_pids(const Snapshot& sample);
    void take(const Append& append);

    Roots roots_;
    std::string step_, host_;
    HangEpisodes episodes_;
    HangEvidenceCapture capture_;
    int capture_episode_ = 0;  // the episode of the capture started last (one runs at a time)
    std::vector<std::string> warnings_;
};

// The timeline event for a finished capture (type "event", kind "hang_evidence").
Json hang_evidence_event(const CaptureResult& result, int episode);

}  // namespace stallscope::cli
