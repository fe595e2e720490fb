#include "libstallscope/sources/nccl/tail_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace stallscope::nccl {
namespace {

constexpr std::size_t kMaxLine = 64 * 1024;  // a longer "line" is not a record of any known writer

}  // namespace

TailFile::TailFile(std::string path, std::size_t backlog) : path_(std::move(path)), backlog_(backlog) {}

std::string TailFile::read_lines(std::size_t max_bytes, std::vector<std::string>& lines) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return path_ + ": " + std::strerror(errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return path_ + ": not a regular file";
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (!started_ || st.st_dev != dev_ || st.st_ino != ino_) {
        // first sight: bounded backlog; a replaced file (new inode) is read from its start
        offset_ = started_ || size <= backlog_ ? 0 : size - backlog_;
        skip_first_ = offset_ > 0;
        partial_.clear();
        started_ = true;
        dev_ = st.st_dev;
        ino_ = st.st_ino;
    } else if (size < offset_) {  // truncated in place (re-opened with "w")
        offset_ = 0;
        partial_.clear();
        skip_first_ = false;
    }
    std::string data;
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size - offset_, max_bytes));
    data.resize(want);
    std::size_t got = 0;
    while (got < want) {
        const ssize_t n = ::pread(fd, data.data() + got, want - got, static_cast<off_t>(offset_ + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    data.resize(got);
    offset_ += got;
    std::size_t pos = 0;
    while (pos < data.size()) {
        const auto nl = data.find('\n', pos);
        if (nl == std::string::npos) {
            partial_.append(data, pos, std::string::npos);
            if (partial_.size() > kMaxLine) {
                partial_.clear();
                skip_first_ = true;  // resynchronise at the next newline
            }
            break;
        }
        partial_.append(data, pos, nl - pos);
        if (skip_first_) {
            skip_first_ = false;
        } else if (partial_.size() <= kMaxLine) {  // a longer line (a writer that never ends it) is dropped
            if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
            lines.push_back(std::move(partial_));
        }
        partial_.clear();
        pos = nl + 1;
    }
    return "";
}

}  // namespace stallscope::nccl
