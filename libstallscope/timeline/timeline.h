// The per-step timeline (schema stallscope.timeline/1, JSON Lines):
//   {"type":"header", "schema":..., job/step/host, interval, inventory, thresholds}
//   {"type":"sample", <snapshot fields>, "summary": {...}}      one per sample, raw counters (rates are
//                                                              derived on read, so replay recomputes them
//                                                              exactly as the live profiler did) and a
//                                                              compact summary of that sample's profile
//                                                              (sample_line.h); timelines written before
//                                                              it carry the full "profile" instead
//   {"type":"event", "time":..., "kind":..., ...}              xid, link state change, step markers
//   {"type":"verdict", <StepVerdict fields>}                   last line when the helper stopped cleanly
// Each line is written with a single write(2) (no user-space buffer to lose on SIGKILL) and the file is
// fdatasync'ed every few lines, so a crash loses at most the line in flight; a torn last line is skipped
// by the reader with a warning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

inline constexpr const char* kTimelineSchema = "stallscope.timeline/1";

class TimelineWriter {
  public:
    TimelineWriter() = default;
    ~TimelineWriter();
    TimelineWriter(const TimelineWriter&) = delete;
    TimelineWriter& operator=(const TimelineWriter&) = delete;

    // Opens for append (creates 0644, refuses symlinks). False + error on failure.
    bool open(const std::string& path, std::string& error);
    bool is_open() const { return fd_ >= 0; }
    const std::string& path() const { return path_; }

    // Appends one JSON object as one line. False + error (e.g. ENOSPC) on failure; the caller decides
    // whether to go on (the helper keeps sampling and reports the loss in the verdict).
    bool append(const Json& line, std::string& error);
    // The same for a line already serialised; `line` must end with '\n' (one write(2) per line).
    bool append_line(std::string_view line, std::string& error);
    void close();

  private:
    int fd_ = -1;
    int lines_since_sync_ = 0;
    std::string path_;
};

// A sample line as a Json (tests, benchmarks); the helper writes the text with append_sample_line().
Json timeline_sample_line(const Snapshot& snapshot, const Profile& profile);

struct TimelineContents {
    std::string path;
    Json header;                    // null when the file had none
    std::vector<Snapshot> samples;  // in file order
    std::vector<Json> events;
    Json recorded_verdict;              // the verdict line, null when the helper did not finish cleanly
    std::vector<std::string> warnings;  // torn/corrupt lines, wrong types (with line numbers)
};

// Receives a timeline line by line, in file order, so a 30-day recording is processed in constant memory.
class TimelineVisitor {
  public:
    virtual ~TimelineVisitor() = default;
    virtual void header(const Json&) {}
    virtual void sample(Snapshot&& snapshot) = 0;
    virtual void event(const Json&) {}
    virtual void verdict(const Json&) {}
};

// Streams a timeline, or a file of `stallscope --interval-seconds N --json` output (snapshot lines), which
// replays the same way. Bad lines become `warnings` (torn, corrupt, wrong types, with line numbers); only
// a missing/unreadable file is an error.
bool visit_timeline(const std::string& path, TimelineVisitor& visitor, std::vector<std::string>& warnings,
                    std::string& error);

// visit_timeline into memory (small files, tests).
bool read_timeline(const std::string& path, TimelineContents& out, std::string& error);

}  // namespace stallscope
