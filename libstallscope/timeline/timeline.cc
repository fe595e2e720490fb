#include "libstallscope/timeline/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "libstallscope/timeline/sample_line.h"

namespace stallscope {
namespace {

// fdatasync every N lines: bounds what a power loss costs without a sync per sample on shared
// filesystems (a sync per second per node is real load on Lustre/NFS).
constexpr int kSyncEveryLines = 10;

// A string member, "" when absent or of another type (Json::value throws on {"type": 1}).
std::string string_member(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A file's lines through one growing buffer: no per-line copy, a line is a view into the buffer until
// the next call.
class LineReader {
  public:
    explicit LineReader(int fd) : fd_(fd), buffer_(kChunk) {}

    // The next line without its '\n'; `terminated` is false for a last line that lacks one (torn). False
    // at the end of the file or on a read error (error()).
    bool next(std::string_view& line, bool& terminated) {
        for (;;) {
            char* const data = buffer_.data();
            if (const void* nl = std::memchr(data + scanned_, '\n', end_ - scanned_)) {
                const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
                line = {data + begin_, at - begin_};
                begin_ = scanned_ = at + 1;
                terminated = true;
                return true;
            }
            scanned_ = end_;
            if (eof_) {
                if (begin_ == end_) return false;
                line = {data + begin_, end_ - begin_};
                begin_ = scanned_ = end_;
                terminated = false;
                return true;
            }
            if (begin_ > 0) {  // keep the partial line, drop what was handed out
                std::memmove(data, data + begin_, end_ - begin_);
                end_ -= begin_;
                scanned_ = end_;
                begin_ = 0;
            }
            if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a line longer than the buffer
            const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) error_ = errno;
            if (n <= 0)
                eof_ = true;
            else
                end_ += static_cast<std::size_t>(n);
        }
    }
    int error() const { return error_; }

  private:
    static constexpr std::size_t kChunk = 1 << 20;
    int fd_;
    std::vector<char> buffer_;
    std::size_t begin_ = 0, scanned_ = 0, end_ = 0;  // handed out up to begin_, no '\n' in [begin_, scanned_)
    bool eof_ = false;
    int error_ = 0;
};

}  // namespace

TimelineWriter::~TimelineWriter() {
    close();
}

bool TimelineWriter::open(const std::string& path, std::string& error) {
    close();
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    path_ = path;
    return true;
}

bool TimelineWriter::append(const Json& line, std::string& error) {
    std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace);
    text.push_back('\n');
    return append_line(text, error);
}

bool TimelineWriter::append_line(std::string_view line, std::string& error) {
    if (fd_ < 0) {
        error = "timeline not open";
        return false;
    }
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = path_ + ": " + std::strerror(n < 0 ? errno : ENOSPC);
            return false;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (++lines_since_sync_ >= kSyncEveryLines) {
        ::fdatasync(fd_);
        lines_since_sync_ = 0;
    }
    return true;
}

void TimelineWriter::close() {
    if (fd_ >= 0) {
        ::fdatasync(fd_);
        ::close(fd_);
    }
    fd_ = -1;
}

Json timeline_sample_line(const Snapshot& snapshot, const Profile& profile) {
    std::string text;
    append_sample_line(text, snapshot, profile);
    return Json::parse(text);
}

bool visit_timeline(const std::string& path, TimelineVisitor& visitor, std::vector<std::string>& warnings,
                    std::string& error) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    LineReader lines(fd);
    std::string_view text;
    bool terminated = true;
    std::size_t number = 0;
    while (lines.next(text, terminated)) {
        ++number;
        if (text.empty()) continue;
        // Sample lines (all but a handful) go straight into a Snapshot; anything that reader does not
        // take as it is (other line types, bad lines, wrong types) goes through nlohmann below.
        {
            Snapshot snapshot;
            if (read_sample_line(text, snapshot)) {
                visitor.sample(std::move(snapshot));
                continue;
            }
        }
        Json line = Json::parse(text, nullptr, false);
        if (line.is_discarded() || !line.is_object()) {
            warnings.push_back(path + ":" + std::to_string(number) +
                               (!terminated ? ": torn last line skipped (helper killed mid-write?)"
                                            : ": not a JSON object, skipped"));
            continue;
        }
        const std::string type = string_member(line, "type");
        const bool snapshot_line = string_member(line, "schema") == kSnapshotSchema;
        if (type == "header") {
            visitor.header(line);
        } else if (type == "verdict") {
            visitor.verdict(line);
        } else if (type == "event") {
            visitor.event(line);
        } else if (type == "sample" || snapshot_line) {
            std::vector<std::string> problems;
            Snapshot snapshot = snapshot_from_json(line, problems);
            for (const auto& p : problems) warnings.push_back(path + ":" + std::to_string(number) + ": " + p);
            visitor.sample(std::move(snapshot));
        } else {
            warnings.push_back(path + ":" + std::to_string(number) + ": unknown line type '" + type +
                               "', skipped");
        }
    }
    const int read_errno = lines.error();
    ::close(fd);
    if (read_errno != 0) {
        error = path + ": " + std::strerror(read_errno);
        return false;
    }
    return true;
}

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
