// TimelineWriter: v1 JSON lines and v2 zstd-compressed change records (timeline.h).
#include "libstallscope/timeline/timeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace stallscope {
namespace {

// Level 6 (lazy matching) for the binary records of stallscope.timeline/3: their varint bytes compress
// worse than decimal text at level 3, and need level 6's hash and chain tables (2^19, 2^18 entries, 3 MiB)
// to find the matches in the records before them: dgx-h100 with traffic moving, 457 B a sample against
// 513 B with level 3's tables (2^17, 2^16) and the JSON text's 507 B at level 3 (bench/RESULTS.md).
constexpr int kZstdLevel = 6;
constexpr int kZstdHashLog = 19;
constexpr int kZstdChainLog = 18;
// 512 KiB of history for matches instead of level 3's 2 MiB: a sample's change record repeats the ones
// just before it (a dgx-h100 sample is ~1.4 KiB before compression, so this window still holds the
// last ~350), the bench's timelines come out the same size to the byte or within 1 %, and both
// ends keep smaller buffers: the helper's compression context ~1.5 MiB less, and a reader's window fits
// in a core's L2, where writes into a 2 MiB one missed (a tenth of a dgx-h100 replay in one store).
constexpr int kZstdWindowLog = 19;
constexpr auto kSyncInterval = std::chrono::seconds(60);

// The profile JSON's rounding: 4 decimals, integral values as integers.
Json confidence_json(double v) {
    if (!std::isfinite(v)) return nullptr;
    if (std::floor(v) == v && std::fabs(v) < 9.0e15) return static_cast<std::int64_t>(v);
    return std::round(v * 10000.0) / 10000.0;
}

// What the profiler made of the sample, in brief, for a human reading the file; replay recomputes it.
Json summary_json(const Profile& p) {
    Json reasons = Json::array();
    for (const auto& r : p.reasons) reasons.push_back(r.subject.empty() ? r.code : r.code + ":" + r.subject);
    Json s{{"label", p.label},
           {"confidence", confidence_json(p.confidence)},
           {"bottleneck_hint", p.bottleneck_hint},
           {"reasons", std::move(reasons)}};
    if (!p.unknown_reason.empty()) s["unknown_reason"] = p.unknown_reason;
    return s;
}

}  // namespace

const char* timeline_suffix(TimelineFormat format) {
    return format == TimelineFormat::zstd_v2 ? ".jsonl.zst" : ".jsonl";
}

Json timeline_sample_line(const Snapshot& snapshot, const Profile& profile) {
    Json line{{"type", "sample"}};
    Json fields = to_json(snapshot);
    for (auto& [key, value] : fields.items()) line[key] = std::move(value);
    line["summary"] = summary_json(profile);
    return line;
}

TimelineWriter::~TimelineWriter() {
    close();
    ZSTD_freeCCtx(zstd_);
}

bool TimelineWriter::open(const std::string& path, std::string& error) {
    close();
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    path_ = path;
    struct stat st {};
    committed_ = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
    last_sync_ = std::chrono::steady_clock::now();
    if (format_ == TimelineFormat::zstd_v2 && !zstd_) {
        zstd_ = ZSTD_createCCtx();
        if (!zstd_ || ZSTD_isError(ZSTD_CCtx_setParameter(zstd_, ZSTD_c_compressionLevel, kZstdLevel)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(zstd_, ZSTD_c_checksumFlag, 1)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(zstd_, ZSTD_c_windowLog, kZstdWindowLog)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(zstd_, ZSTD_c_hashLog, kZstdHashLog)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(zstd_, ZSTD_c_chainLog, kZstdChainLog))) {
            error = path + ": cannot set up zstd compression";
            close();
            return false;
        }
    }
    frame_started_ = false;
    header_due_ = true;
    return true;
}

bool TimelineWriter::write_all(std::string_view bytes, std::string& error) {
    if (fd_ < 0) {
        error = "timeline not open";
        return false;
    }
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = path_ + ": " + std::strerror(n < 0 ? errno : ENOSPC);
            frame_started_ = false;  // the decoder's history no longer matches ours: start over
            header_due_ = true;
            // What part of this write got in (a full disk takes what fits) goes again: the file ends
            // where the last whole flush ended. Else the next frame, here or where the file is moved,
            // would follow a torn block, and a reader decodes the torn block's missing bytes from the
            // new frame's: with binary records zstd writes small flushes as raw blocks, which decode
            // without an error, so the new frame's bytes came out as lines of the old one.
            if (p != bytes.data() && committed_ >= 0 && ::ftruncate(fd_, committed_) != 0) committed_ = -1;
            return false;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (committed_ >= 0) committed_ += static_cast<off_t>(bytes.size());
    return true;
}

// One line through the compressor and out with one write(2): flushed, so a reader (or a crash) sees every
// line written so far.
bool TimelineWriter::compress(std::string_view line, ZSTD_EndDirective directive, std::string& error) {
    compressed_.resize(ZSTD_compressBound(line.size()) + 64);
    ZSTD_inBuffer in{line.data(), line.size(), 0};
    std::size_t produced = 0;
    for (;;) {
        ZSTD_outBuffer out{compressed_.data() + produced, compressed_.size() - produced, 0};
        const std::size_t left = ZSTD_compressStream2(zstd_, &out, &in, directive);
        produced += out.pos;
        if (ZSTD_isError(left)) {
            error = path_ + ": zstd: " + ZSTD_getErrorName(left);
            frame_started_ = false;
            return false;
        }
        if (left == 0) break;
        compressed_.resize(compressed_.size() + left + 64);
    }
    return write_all({compressed_.data(), produced}, error);
}

// A new frame begins with everything a reader needs on its own: the header and (next) a full sample.
bool TimelineWriter::start_frame(std::string& error) {
    ZSTD_CCtx_reset(zstd_, ZSTD_reset_session_only);
    encoder_.reset();
    samples_in_frame_ = 0;
    frame_started_ = true;
    if (!header_due_ || header_line_.empty()) return true;
    header_due_ = false;
    return compress(header_line_, ZSTD_e_flush, error);
}

void TimelineWriter::maybe_sync() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_sync_ < kSyncInterval) return;
    ::fdatasync(fd_);
    last_sync_ = now;
}

bool TimelineWriter::append_line(std::string_view line, std::string& error) {
    if (fd_ < 0) {
        error = "timeline not open";
        return false;
    }
    if (format_ == TimelineFormat::zstd_v2) {
        if (!frame_started_ && !start_frame(error)) return false;
        if (!compress(line, ZSTD_e_flush, error)) return false;
    } else if (!write_all(line, error)) {
        return false;
    }
    maybe_sync();
    return true;
}

bool TimelineWriter::append(const Json& line, std::string& error) {
    line_ = line.dump(-1, ' ', false, Json::error_handler_t::replace);
    line_.push_back('\n');
    return append_line(line_, error);
}

bool TimelineWriter::write_header(const Json& header, std::string& error) {
    if (format_ == TimelineFormat::jsonl_v1) return append(header, error);
    Json h = header;
    h["schema"] = encoder_.binary_records() ? kTimelineSchemaV3 : kTimelineSchemaV2;
    header_line_ = h.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    if (fd_ < 0) {
        error = "timeline not open";
        return false;
    }
    if (frame_started_) return compress(header_line_, ZSTD_e_flush, error);
    return start_frame(error);  // writes it
}

bool TimelineWriter::append_sample(const Snapshot& snapshot, const Profile& profile, std::string& error) {
    if (format_ == TimelineFormat::jsonl_v1) return append(timeline_sample_line(snapshot, profile), error);
    if (fd_ < 0) {
        error = "timeline not open";
        return false;
    }
    if (!frame_started_ && !start_frame(error)) return false;
    line_.clear();
    encoder_.append_record(snapshot, line_);
    line_.push_back('\n');
    // The last sample of a frame ends it; the next sample starts a new one with a full sample. The time a
    // frame covers adds up the intervals that went forward, so a clock stepped back neither ends a frame
    // nor holds one open for the hours it went back (a time that is not a number adds nothing).
    if (samples_in_frame_ == 0)
        frame_seconds_ = 0;
    else if (snapshot.time > frame_last_time_)
        frame_seconds_ += snapshot.time - frame_last_time_;
    frame_last_time_ = snapshot.time;
    const bool last_in_frame = ++samples_in_frame_ >= samples_per_frame_ || frame_seconds_ >= kFrameSeconds;
    if (!compress(line_, last_in_frame ? ZSTD_e_end : ZSTD_e_flush, error)) return false;
    if (last_in_frame) frame_started_ = false;  // the header once per file: readers keep it across frames
    maybe_sync();
    return true;
}

void TimelineWriter::close() {
    if (fd_ >= 0) {
        if (zstd_ && frame_started_) {  // end the frame so the file is a complete zstd stream
            std::string ignored;
            compress({}, ZSTD_e_end, ignored);
        }
        ::fdatasync(fd_);
        ::close(fd_);
    }
    fd_ = -1;
    frame_started_ = false;
}

// visit_timeline (timeline_reader.cc) into memory.
bool read_timeline(const std::string& path, TimelineContents& out, std::string& error) {
    struct Collect final : TimelineVisitor {
        TimelineContents& c;
        explicit Collect(TimelineContents& contents) : c(contents) {}
        void header(const Json& h) override { c.header = h; }
        void sample(Snapshot&& s) override { c.samples.push_back(std::move(s)); }
        void event(const Json& e) override { c.events.push_back(e); }
        void verdict(const Json& v) override { c.recorded_verdict = v; }
    } collect(out);
    out.path = path;
    return visit_timeline(path, collect, out.warnings, error);
}

}  // namespace stallscope
