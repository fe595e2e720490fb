// A timeline's bytes as lines, plain or zstd-compressed, read safely: summarize runs this as the job user
// from a root-run epilog on files in a directory the user controls, so nothing here may block, follow a
// link, or grow without bound.
//  - open: O_NOFOLLOW | O_NONBLOCK (a FIFO named timeline.*.jsonl does not block), regular files only
//    (fstat; /dev/zero, FIFOs, sockets, directories are refused).
//  - a line longer than max_line_bytes is skipped with a warning (the buffer never grows past it);
//  - at most max_input_bytes are read, and a compressed stream may expand to at most
//    max(kMinDecompressed, max_expansion x its compressed size) (a zstd bomb stops with an error);
//  - a damaged zstd frame is skipped to the next frame with a warning; a frame cut short (helper killed)
//    gives every complete line before the cut.
// Lines handed out are followed by at least kLinePadding readable bytes (what simdjson needs).
#pragma once

#include <zstd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace stallscope {

struct TimelineReadLimits {
    std::size_t max_line_bytes = std::size_t{1} << 20;
    std::uint64_t max_input_bytes = std::uint64_t{1} << 40;
    std::uint64_t max_expansion = 1000;
    // Bytes read so far, for a progress bar (added to, never reset); may be null.
    std::atomic<std::uint64_t>* progress_bytes = nullptr;
    // Every v2 sample read whole from the decoded tree, nothing placed from a change record, every line
    // parsed with the DOM (no On Demand plain records): slower, and the reference the reader's shortcuts
    // are checked against (tests, the timeline fuzz target).
    bool whole_samples = false;
};

class TimelineInput {
  public:
    static constexpr std::size_t kLinePadding = 64;
    static constexpr std::uint64_t kMinDecompressed = std::uint64_t{64} << 20;

    using WarningSink = std::function<void(std::size_t line_number, const std::string& warning)>;

    TimelineInput(const TimelineReadLimits& limits, WarningSink warn);
    ~TimelineInput();
    TimelineInput(const TimelineInput&) = delete;
    TimelineInput& operator=(const TimelineInput&) = delete;

    // Opens `path` as described above; "-" is standard input. False + error.
    bool open(const std::string& path, std::string& error);
    // Reads an already open descriptor (not closed here); regular files, pipes and memfds.
    bool adopt(int fd, const std::string& name, std::string& error);

    enum class Next { line, end, error };
    // The next non-skipped line without its '\n'. `terminated` is false for a last line that lacks one.
    Next next(std::string_view& line, bool& terminated, std::string& error);
    std::size_t line_number() const { return line_number_; }
    bool compressed() const { return zstd_ != nullptr; }
    // Nothing at all was read (an empty file).
    bool empty() const { return input_bytes_ == 0; }

  private:
    enum class Fill { data, eof, error };
    Fill fill(std::string& error);
    Fill fill_plain(char* to, std::size_t room, std::size_t& got, std::string& error);
    Fill fill_zstd(char* to, std::size_t room, std::size_t& got, std::string& error);
    bool read_raw(std::string& error);  // more compressed bytes into in_
    bool sniff(std::string& error);
    void drop_frame();
    void resync();
    bool starts_new_frame(std::size_t at);
    Next first_line_too_long(std::string& error) const;

    TimelineReadLimits limits_;
    WarningSink warn_;
    int fd_ = -1;
    bool own_fd_ = false;
    std::string name_;
    // Lines: [begin_, end_) holds data not yet handed out; no '\n' in [begin_, scanned_).
    std::unique_ptr<char[]> buffer_;
    std::size_t capacity_ = 0, begin_ = 0, scanned_ = 0, end_ = 0;
    bool eof_ = false, skipping_ = false, sniffed_ = false;
    std::size_t line_number_ = 0;
    // Raw bytes (compressed, or the first bytes of a plain file while sniffing).
    std::unique_ptr<char[]> raw_;
    std::size_t raw_capacity_ = 0, raw_pos_ = 0, raw_end_ = 0;
    std::uint64_t raw_base_ = 0;     // file offset of raw_[0]
    std::uint64_t frame_start_ = 0;  // file offset where the frame being decoded began
    bool raw_eof_ = false;
    std::uint64_t input_bytes_ = 0, output_bytes_ = 0;
    ZSTD_DCtx* zstd_ = nullptr;
    ZSTD_DCtx* probe_ = nullptr;       // starts_new_frame's, made when first needed
    std::size_t next_input_hint_ = 0;  // what zstd says completes its next block (0: unknown)
    bool frame_open_ = false;          // inside a frame: EOF now means a torn frame
    bool seeking_frame_ = false;       // after damaged data: skipping to the next frame's magic number
    bool lost_bytes_ = false;          // bytes were lost: the partial line before them is not a line
};

}  // namespace stallscope
