#include "libstallscope/timeline/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

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
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    std::string text;
    std::size_t number = 0;
    while (std::getline(in, text)) {
        ++number;
        const bool last_line_unterminated = in.eof();
        if (text.empty()) continue;
        Json line = Json::parse(text, nullptr, false);
        if (line.is_discarded() || !line.is_object()) {
            warnings.push_back(path + ":" + std::to_string(number) +
                               (last_line_unterminated ? ": torn last line skipped (helper killed mid-write?)"
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
