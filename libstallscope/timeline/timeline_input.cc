#include "libstallscope/timeline/timeline_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace stallscope {
namespace {

constexpr std::size_t kChunk = std::size_t{256} << 10;
// Compressed bytes kept after the decoder consumed them: a block cut short (helper killed, disk full) and
// followed by a new frame swallows up to a block (128 KiB) of that frame, which a resync must see again.
constexpr std::size_t kRawHistory = std::size_t{160} << 10;
constexpr std::size_t kRawRead = std::size_t{512} << 10;
constexpr std::size_t kSlice = 256;
constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
// RFC 8878 3.1.1.2: a block starts with a 3-byte header. Between two blocks of a frame, what zstd asks for
// next (ZSTD_decompressStream's hint) is exactly that header: the frame's input ended on a block boundary.
constexpr std::size_t kBlockHeaderBytes = 3;

// The first zstd frame magic in [from, from + n), or nullptr. memchr for its first byte, then a compare:
// this runs once per block (once per sample), where memmem's setup cost was 2-3 % of a replay.
const char* find_frame_magic(const char* from, std::size_t n) {
    const char* const end = from + n;
    while (static_cast<std::size_t>(end - from) >= sizeof kZstdMagic) {
        const auto* at = static_cast<const char*>(
            std::memchr(from, kZstdMagic[0], static_cast<std::size_t>(end - from) - sizeof kZstdMagic + 1));
        if (!at) return nullptr;
        if (std::memcmp(at, kZstdMagic, sizeof kZstdMagic) == 0) return at;
        from = at + 1;
    }
    return nullptr;
}

std::string size_text(std::uint64_t bytes) {
    return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

}  // namespace

TimelineInput::TimelineInput(const TimelineReadLimits& limits, WarningSink warn)
    : limits_(limits), warn_(std::move(warn)) {
    // Not zeroed: nothing is read before it is written (simdjson's padding past a line may hold
    // anything), and zeroing ~1.9 MB touched ~470 pages per timeline, most of which a short or plain
    // timeline never uses (report and replay open one reader per node's file).
    capacity_ = limits_.max_line_bytes + kChunk + kLinePadding;
    buffer_ = std::make_unique_for_overwrite<char[]>(capacity_);
    raw_capacity_ = kRawHistory + kRawRead;
    raw_ = std::make_unique_for_overwrite<char[]>(raw_capacity_);
}

TimelineInput::~TimelineInput() {
    if (own_fd_ && fd_ >= 0) ::close(fd_);
    ZSTD_freeDCtx(zstd_);
    ZSTD_freeDCtx(probe_);
}

bool TimelineInput::open(const std::string& path, std::string& error) {
    if (path == "-") return adopt(STDIN_FILENO, "stdin", error);
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer. Regular files ignore it.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        error = path + ": " + (errno == ELOOP ? "is a symbolic link (refused)" : std::strerror(errno));
        return false;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        error = path + ": not a stallscope timeline (not a regular file)";
        return false;
    }
    fd_ = fd;
    own_fd_ = true;
    name_ = path;
    return true;
}

bool TimelineInput::adopt(int fd, const std::string& name, std::string& error) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        error = name + ": not a stallscope timeline (a directory or unreadable)";
        return false;
    }
    fd_ = fd;
    own_fd_ = false;
    name_ = name;
    return true;
}

bool TimelineInput::read_raw(std::string& error) {
    if (raw_pos_ > kRawHistory) {
        const std::size_t drop = raw_pos_ - kRawHistory;
        std::memmove(raw_.get(), raw_.get() + drop, raw_end_ - drop);
        raw_end_ -= drop;
        raw_pos_ -= drop;
        raw_base_ += drop;
    }
    for (;;) {
        const ssize_t n = ::read(fd_, raw_.get() + raw_end_, raw_capacity_ - raw_end_);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            error = name_ + ": " + std::strerror(errno);
            return false;
        }
        if (n == 0) raw_eof_ = true;
        raw_end_ += static_cast<std::size_t>(n);
        input_bytes_ += static_cast<std::uint64_t>(n);
        if (limits_.progress_bytes) *limits_.progress_bytes += static_cast<std::uint64_t>(n);
        if (input_bytes_ > limits_.max_input_bytes) {
            error = name_ + ": larger than " + size_text(limits_.max_input_bytes) + " (refused)";
            return false;
        }
        return true;
    }
}

// The first bytes say which it is: zstd's frame magic, or JSON lines (a '{' after any blank).
bool TimelineInput::sniff(std::string& error) {
    sniffed_ = true;
    while (raw_end_ < sizeof kZstdMagic && !raw_eof_)
        if (!read_raw(error)) return false;
    if (raw_end_ >= sizeof kZstdMagic && std::memcmp(raw_.get(), kZstdMagic, sizeof kZstdMagic) == 0) {
        zstd_ = ZSTD_createDCtx();
        if (!zstd_) {
            error = name_ + ": cannot allocate a zstd decoder";
            return false;
        }
        return true;
    }
    for (std::size_t i = 0; i < raw_end_; ++i) {
        const char c = raw_[i];
        if (c == '{') return true;
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
            error = name_ + ": not a stallscope timeline (neither JSON lines nor zstd)";
            return false;
        }
    }
    return true;  // empty or blank so far: the lines decide
}

TimelineInput::Fill TimelineInput::fill_plain(char* to, std::size_t room, std::size_t& got,
                                              std::string& error) {
    if (raw_pos_ < raw_end_) {  // what sniffing read first
        got = std::min(room, raw_end_ - raw_pos_);
        std::memcpy(to, raw_.get() + raw_pos_, got);
        raw_pos_ += got;
        return Fill::data;
    }
    if (raw_eof_) return Fill::eof;
    for (;;) {
        const ssize_t n = ::read(fd_, to, room);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            error = name_ + ": " + std::strerror(errno);
            return Fill::error;
        }
        if (n == 0) return Fill::eof;
        got = static_cast<std::size_t>(n);
        input_bytes_ += got;
        if (limits_.progress_bytes) *limits_.progress_bytes += got;
        if (input_bytes_ > limits_.max_input_bytes) {
            error = name_ + ": larger than " + size_text(limits_.max_input_bytes) + " (refused)";
            return Fill::error;
        }
        return Fill::data;
    }
}

// After damaged compressed data: forget the frame and look for the next frame's magic number, from just
// after the failed frame's start (as far back as the history reaches): the damage may have swallowed it.
// The decoder leaves the frame it is in; the partial line before this point is dropped (lost_bytes_).
void TimelineInput::drop_frame() {
    ZSTD_DCtx_reset(zstd_, ZSTD_reset_session_only);
    frame_open_ = false;
    lost_bytes_ = true;
    next_input_hint_ = 0;
}

void TimelineInput::resync() {
    drop_frame();
    seeking_frame_ = true;
    const std::uint64_t from = std::max(frame_start_ + 1, raw_base_);
    raw_pos_ = static_cast<std::size_t>(std::min<std::uint64_t>(from - raw_base_, raw_end_));
}

// Whether a new frame starts at raw_[at]: its magic, and its first byte decodes (from what has been read)
// to a JSON line's '{', as every frame a writer starts (its header, or a full sample). A magic that is
// only bytes of compressed data fails this; a new frame written after a block cut short passes.
bool TimelineInput::starts_new_frame(std::size_t at) {
    if (raw_end_ - at < sizeof kZstdMagic || std::memcmp(raw_.get() + at, kZstdMagic, sizeof kZstdMagic) != 0)
        return false;
    if (!probe_ && !(probe_ = ZSTD_createDCtx())) return false;
    ZSTD_DCtx_reset(probe_, ZSTD_reset_session_only);
    char first = 0;
    ZSTD_outBuffer out{&first, 1, 0};
    ZSTD_inBuffer in{raw_.get() + at, raw_end_ - at, 0};
    while (out.pos == 0 && in.pos < in.size) {
        const std::size_t before = in.pos;
        const std::size_t ret = ZSTD_decompressStream(probe_, &out, &in);
        if (ZSTD_isError(ret) || ret == 0 || (in.pos == before && out.pos == 0)) break;
    }
    return out.pos == 1 && first == '{';
}

TimelineInput::Fill TimelineInput::fill_zstd(char* to, std::size_t room, std::size_t& got,
                                             std::string& error) {
    ZSTD_outBuffer out{to, room, 0};
    while (out.pos == 0) {
        if (seeking_frame_) {
            const char* from = raw_.get() + raw_pos_;
            const char* found = find_frame_magic(from, raw_end_ - raw_pos_);
            if (found) {
                raw_pos_ = static_cast<std::size_t>(found - raw_.get());
                seeking_frame_ = false;
            } else {
                raw_pos_ = std::max(raw_pos_, raw_end_ >= 3 ? raw_end_ - 3 : 0);  // a magic split by reads
                if (raw_eof_) return Fill::eof;
                if (!read_raw(error)) return Fill::error;
                continue;
            }
        }
        if (raw_pos_ == raw_end_) {
            if (raw_eof_) {
                // A frame still open after its last whole block is a helper still recording (`report` on a
                // running job) or one stopped between two flushes: every sample it flushed was read, and
                // the missing verdict line says the rest. Only a block cut short lost something.
                if (frame_open_ && next_input_hint_ != kBlockHeaderBytes)
                    warn_(line_number_ + 1,
                          "compressed stream ends part-way through a block or the frame's checksum (helper "
                          "killed mid-write, or still writing); the lines of a block cut short are skipped");
                frame_open_ = false;
                return Fill::eof;
            }
            if (!read_raw(error)) return Fill::error;
            continue;
        }
        if (!frame_open_) frame_start_ = raw_base_ + raw_pos_;
        // At most the next block per call (zstd's hint): on an error zstd reports nothing of what that call
        // decoded, so a damaged block must not take the lines flushed just before it along.
        // (zstd's hints stay under a block, 128 KiB + 3; the cap keeps a hint from a hostile file below what
        // one read_raw can add, so the read-ahead below always has room.)
        const std::size_t slice = std::min(next_input_hint_ > 0 ? next_input_hint_ : kSlice, kRawRead / 2);
        if (frame_open_ && !raw_eof_ && raw_end_ - raw_pos_ < slice + sizeof kZstdMagic) {
            if (!read_raw(error))
                return Fill::error;  // so a magic is never split by the end of what was read
            continue;
        }
        const std::size_t call_start = raw_pos_;
        // A new frame where the decoder is part-way through a block: a block cut short (helper killed
        // mid-write, a crash), then a frame written after it. Decoding on would take the new frame's
        // bytes for the rest of the block, and a raw block (zstd writes small flushes so) takes them
        // without an error: the new frame would come out as lines of the old one.
        if (frame_open_ && next_input_hint_ != kBlockHeaderBytes && starts_new_frame(call_start)) {
            warn_(line_number_ + 1,
                  "a frame ends part-way through a block where the next one starts (helper killed mid-write, "
                  "then restarted?); the lines of the block cut short are skipped");
            drop_frame();
            continue;
        }
        std::size_t limit = std::min(raw_end_, raw_pos_ + slice);
        // The hint also covers the next block's header, and after an unfinished frame (helper killed, then
        // restarted; timeline moved off a full disk) the next "header" is a new frame's magic: stop before
        // it, so that frame's last block comes out before the decoder meets the magic (a magic inside
        // compressed data only splits a call in two).
        if (frame_open_ && limit > raw_pos_ + 1) {
            const std::size_t search_end = std::min(raw_end_, limit + sizeof kZstdMagic - 1);
            if (const char* found = find_frame_magic(raw_.get() + raw_pos_ + 1, search_end - raw_pos_ - 1))
                limit = std::min(limit, static_cast<std::size_t>(found - raw_.get()));
        }
        ZSTD_inBuffer in{raw_.get(), limit, raw_pos_};
        const std::size_t ret = ZSTD_decompressStream(zstd_, &out, &in);
        raw_pos_ = in.pos;
        if (ZSTD_isError(ret) && frame_open_ && raw_end_ - call_start >= sizeof kZstdMagic &&
            std::memcmp(raw_.get() + call_start, kZstdMagic, sizeof kZstdMagic) == 0) {
            // Nothing is damaged: the unfinished frame's lines are all out, its partial last line (if any)
            // is dropped, and the new frame is decoded from its first byte.
            warn_(line_number_ + 1,
                  "a frame ends unfinished where the next one starts (helper restarted or timeline moved?)");
            drop_frame();
            raw_pos_ = call_start;
            if (out.pos > 0) break;
            continue;
        }
        if (ZSTD_isError(ret)) {
            warn_(line_number_ + 1, "damaged compressed data near byte " + std::to_string(input_bytes_) +
                                        " (" + ZSTD_getErrorName(ret) + "), skipped to the next frame");
            resync();
            break;  // the partial line before the damage is dropped before anything after it is added
        }
        frame_open_ = ret != 0;
        next_input_hint_ = ret;
    }
    got = out.pos;
    output_bytes_ += got;
    const std::uint64_t allowed = std::max(kMinDecompressed, limits_.max_expansion * input_bytes_);
    if (output_bytes_ > allowed) {
        error = name_ + ": decompresses to more than " + std::to_string(limits_.max_expansion) +
                "x its size (refused: not a timeline stallscope wrote)";
        return Fill::error;
    }
    return Fill::data;
}

TimelineInput::Fill TimelineInput::fill(std::string& error) {
    if (!sniffed_ && !sniff(error)) return Fill::error;
    if (lost_bytes_ && end_ > begin_) {
        // Only a partial line is left (fill runs when no '\n' is pending): what followed it is lost.
        warn_(line_number_ + 1, "partial line before damaged compressed data skipped");
        begin_ = scanned_ = end_ = 0;
    }
    lost_bytes_ = false;
    if (begin_ > 0) {
        std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
        end_ -= begin_;
        scanned_ = end_;
        begin_ = 0;
    }
    std::size_t got = 0;
    const std::size_t room = capacity_ - kLinePadding - end_;
    const Fill f = zstd_ ? fill_zstd(buffer_.get() + end_, room, got, error)
                         : fill_plain(buffer_.get() + end_, room, got, error);
    end_ += got;
    return f;
}

// A timeline's first line is its header (a few KiB): a first line this long is something else (/dev/zero
// through stdin, a binary), and reading on for its end could take forever.
TimelineInput::Next TimelineInput::first_line_too_long(std::string& error) const {
    error = name_ + ": not a stallscope timeline (first line longer than " +
            size_text(limits_.max_line_bytes) + ")";
    return Next::error;
}

TimelineInput::Next TimelineInput::next(std::string_view& line, bool& terminated, std::string& error) {
    for (;;) {
        char* const data = buffer_.get();
        if (const void* nl = std::memchr(data + scanned_, '\n', end_ - scanned_)) {
            const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
            const std::size_t length = at - begin_;
            const bool was_skipping = skipping_;
            line = {data + begin_, length};
            begin_ = scanned_ = at + 1;
            skipping_ = false;
            if (was_skipping) continue;  // the end of a line too long to keep
            ++line_number_;
            if (length > limits_.max_line_bytes) {
                if (line_number_ == 1) return first_line_too_long(error);
                warn_(line_number_, "line longer than " + size_text(limits_.max_line_bytes) + ", skipped");
                continue;
            }
            terminated = true;
            return Next::line;
        }
        scanned_ = end_;
        if (skipping_) {
            begin_ = scanned_ = end_ = 0;
        } else if (end_ - begin_ > limits_.max_line_bytes) {
            ++line_number_;
            if (line_number_ == 1) return first_line_too_long(error);
            warn_(line_number_, "line longer than " + size_text(limits_.max_line_bytes) + ", skipped");
            skipping_ = true;
            begin_ = scanned_ = end_ = 0;
            continue;
        }
        if (eof_) {
            if (begin_ == end_) return Next::end;
            line = {data + begin_, end_ - begin_};
            begin_ = scanned_ = end_;
            ++line_number_;
            terminated = false;
            return Next::line;
        }
        switch (fill(error)) {
            case Fill::error:
                return Next::error;
            case Fill::eof:
                eof_ = true;
                break;
            case Fill::data:
                break;
        }
    }
}

}  // namespace stallscope
