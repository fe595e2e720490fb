// The per-step timeline, in two formats that both replay:
//
// stallscope.timeline/1, `timeline.<step>.<host>.jsonl` (JSON Lines):
//   {"type":"header", "schema":..., job/step/host, interval, inventory, thresholds}
//   {"type":"sample", <to_json(snapshot) fields>, "summary": {...}}  one per sample, every counter
//   {"type":"event", "time":..., "kind":..., ...}              xid, link state change, step markers
//   {"type":"verdict", <StepVerdict fields>}                   last line when the helper stopped cleanly
//
// stallscope.timeline/3 (and /2 before it), `timeline.<step>.<host>.jsonl.zst`: the same kinds of lines,
// zstd-compressed, with sample lines that carry only what changed since the previous sample
// (snapshot_diff.h); in /3 most of them are binary records of the numbers that moved (binary_record.h),
// the rest JSON. Each line is compressed and flushed (ZSTD_e_flush) into the file with one write(2), so
// a killed helper loses at most the line in flight; `stallscope export FILE` gives v1 lines. A new
// frame with a full sample starts every kSamplesPerFrame samples or kFrameSeconds of sample time, whichever
// comes first, and after a failed write, so damage costs at most the rest of a frame: an hour at 1 s, and
// still an hour at the 30 s of a days-long job (by count alone, 30 hours).
//
// Raw counters are written, never rates: replay derives them exactly as the live profiler did. Files are
// fdatasync'ed at most once a minute (a sync per second per node is real load on Lustre/NFS) and at close.
#pragma once

#include <sys/types.h>
#include <zstd.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/timeline/snapshot_diff.h"
#include "libstallscope/timeline/timeline_input.h"

namespace stallscope {

inline constexpr const char* kTimelineSchema = "stallscope.timeline/1";
inline constexpr const char* kTimelineSchemaV2 = "stallscope.timeline/2";
inline constexpr const char* kTimelineSchemaV3 = "stallscope.timeline/3";  // v2 + binary records

enum class TimelineFormat { jsonl_v1, zstd_v2 };
// ".jsonl" or ".jsonl.zst": what follows timeline.<step>.<host> in the file name.
const char* timeline_suffix(TimelineFormat format);

class TimelineWriter {
  public:
    static constexpr int kSamplesPerFrame = 3600;
    // A frame also ends with the sample that brings the sample time it covers to this many seconds.
    static constexpr double kFrameSeconds = 3600;

    explicit TimelineWriter(TimelineFormat format = TimelineFormat::jsonl_v1) : format_(format) {
        encoder_.set_binary_records(true);
    }
    ~TimelineWriter();
    TimelineWriter(const TimelineWriter&) = delete;
    TimelineWriter& operator=(const TimelineWriter&) = delete;

    // Opens for append (creates 0644, refuses symlinks). False + error on failure. A v2 writer starts a new
    // frame, and writes the header (if one was written before) and a full sample again.
    bool open(const std::string& path, std::string& error);
    bool is_open() const { return fd_ >= 0; }
    const std::string& path() const { return path_; }
    TimelineFormat format() const { return format_; }
    // Plain change records as JSON text and the header's schema stallscope.timeline/2, as written before
    // the binary record (tests: every such file must still read).
    void write_v2_text_records() { encoder_.set_binary_records(false); }
    // Samples per zstd frame (tests make it small to damage one frame of several).
    void set_samples_per_frame(int samples) { samples_per_frame_ = samples > 0 ? samples : 1; }

    // The header line (compressed: with its schema set to stallscope.timeline/3, and kept for a reopened
    // file).
    bool write_header(const Json& header, std::string& error);
    // One sample: v1 the whole snapshot and a summary of its profile, v2 what changed.
    bool append_sample(const Snapshot& snapshot, const Profile& profile, std::string& error);
    // Appends one JSON object as one line (events, the verdict). False + error (e.g. ENOSPC) on failure;
    // the caller decides whether to go on (the helper keeps sampling and reports the loss in the verdict).
    bool append(const Json& line, std::string& error);
    // The same for a line already serialised; `line` must end with '\n'.
    bool append_line(std::string_view line, std::string& error);
    void close();

  private:
    bool write_all(std::string_view bytes, std::string& error);
    bool compress(std::string_view line, ZSTD_EndDirective directive, std::string& error);
    bool start_frame(std::string& error);
    void maybe_sync();

    TimelineFormat format_;
    int fd_ = -1;
    std::string path_;
    std::chrono::steady_clock::time_point last_sync_{};
    // v2
    ZSTD_CCtx* zstd_ = nullptr;
    bool frame_started_ = false;  // false: the next line starts a frame (header, full sample)
    int samples_in_frame_ = 0;
    int samples_per_frame_ = kSamplesPerFrame;
    double frame_seconds_ = 0;    // sample time the frame covers so far (forward intervals only)
    double frame_last_time_ = 0;  // sample time of the frame's last sample
    std::string header_line_;     // '\n'-terminated, "" until write_header
    bool header_due_ = true;      // at the start of a file, and after a failed write
    off_t committed_ = 0;         // the file's size after the last whole write (-1: unknown)
    SnapshotDiffEncoder encoder_;
    std::string line_, compressed_;  // reused for every sample: no per-sample allocation once grown
};

// A v1 sample line as a Json (tests, benchmarks, `export`).
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
    // A sample lent rather than given. The v2 reader updates one kept Snapshot from record to record, so
    // handing out an owned one costs a whole Snapshot copy (every map node: more than the reading).
    // A visitor that only looks, or that copy-assigns into storage of its own (Profiler::observe(const
    // Snapshot&) assigns into its previous sample, reusing its nodes), overrides this to save that copy.
    virtual void sample_view(const Snapshot& snapshot) { sample(Snapshot(snapshot)); }
    // sample_view with the lender's shape promise (SnapshotShape, snapshot.h): what the v2 reader calls.
    // A visitor that profiles passes the shape on (Profiler::observe_view_for_verdict).
    virtual void sample_lent(const Snapshot& snapshot, SnapshotShape) { sample_view(snapshot); }
    virtual void event(const Json&) {}
    virtual void verdict(const Json&) {}
};

// Streams a timeline (v1 or v2; "-" is standard input), or a file of `stallscope --interval-seconds N
// --json` output (snapshot lines), which replays the same way. Read safely (timeline_input.h). Bad lines
// become `warnings` (torn, corrupt, wrong types, with line numbers; after kMaxWarnings one summary). A
// missing or unreadable file, or one whose first line is not a timeline's, is an error ("not a stallscope
// timeline").
inline constexpr std::size_t kMaxWarnings = 20;
bool visit_timeline(const std::string& path, TimelineVisitor& visitor, std::vector<std::string>& warnings,
                    std::string& error, const TimelineReadLimits& limits = {});
// The same on an open descriptor (not closed), named `name` in messages.
bool visit_timeline_fd(int fd, const std::string& name, TimelineVisitor& visitor,
                       std::vector<std::string>& warnings, std::string& error,
                       const TimelineReadLimits& limits = {});

// visit_timeline into memory (small files, tests).
bool read_timeline(const std::string& path, TimelineContents& out, std::string& error);

}  // namespace stallscope
