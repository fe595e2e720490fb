#include "helper/output_fallback.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "helper/output_dir.h"

namespace stallscope::cli {
namespace {

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

std::string errno_text(const std::string& path) {
    return path + ": " + std::strerror(errno);
}

}  // namespace

bool copy_complete_lines(const std::string& from, const std::string& to, std::string& error) {
    Fd in{::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
    if (in.fd < 0) return error = errno_text(from), false;
    Fd out{::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (out.fd < 0) return error = errno_text(to), false;
    // Streamed in 1 MiB pieces: a long job's timeline is far larger than what we want to hold.
    std::string buffer(1 << 20, '\0');
    off_t copied = 0, complete = 0;
    while (true) {
        const ssize_t n = ::read(in.fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return error = errno_text(from), false;
        if (n == 0) break;
        for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(out.fd, buffer.data() + done, static_cast<std::size_t>(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return error = errno_text(to), false;
            done += w;
        }
        for (ssize_t i = n; i > 0; --i)
            if (buffer[static_cast<std::size_t>(i - 1)] == '\n') {
                complete = copied + i;
                break;
            }
        copied += n;
    }
    // A compressed (v2) timeline has no line structure: a '\n' byte means nothing there. It is copied
    // whole: it ends where the writer's last whole flush ended (a failed write takes back what part of it
    // got in), and the reopened writer starts a new zstd frame.
    const bool compressed = from.size() > 4 && from.compare(from.size() - 4, 4, ".zst") == 0;
    if (::ftruncate(out.fd, compressed ? copied : complete) != 0 || ::fsync(out.fd) != 0)
        return error = errno_text(to), false;
    return true;
}

bool relocate_timeline(TimelineWriter& timeline, const std::string& requested_dir, const std::string& why,
                       std::string* dir, std::string* warning) {
    const std::string from = timeline.path();
    const OutputDir fallback = fallback_output_dir(requested_dir, why);
    if (fallback.path.empty()) {
        *warning = fallback.warning + "; later timeline lines are missing";
        return false;
    }
    const std::string to = fallback.path + from.substr(from.find_last_of('/'));
    std::string error;
    if (!copy_complete_lines(from, to, error)) {
        ::unlink(to.c_str());
        *warning = "timeline " + from + ": " + why + "; moving it to " + fallback.path + " failed (" + error +
                   "); later timeline lines are missing";
        return false;
    }
    timeline.close();
    if (!timeline.open(to, error)) {
        *warning = "timeline moved to " + to + " but cannot be reopened (" + error + ")";
        return false;
    }
    ::unlink(from.c_str());  // the copy holds every complete line; this gives the full disk its space back
    *dir = fallback.path;
    *warning =
        "timeline " + from + ": " + why + "; moved it (every complete line) to " + to + " and went on there";
    return true;
}

}  // namespace stallscope::cli
