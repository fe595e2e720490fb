#include "libstallscope/sources/procfs/kept_open_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace stallscope {

KeptOpenFile::KeptOpenFile(std::string path, std::size_t max_bytes)
    : path_(std::move(path)), max_bytes_(max_bytes), buffer_(4096) {}

KeptOpenFile::KeptOpenFile(KeptOpenFile&& other) noexcept
    : path_(std::move(other.path_)),
      max_bytes_(other.max_bytes_),
      fd_(std::exchange(other.fd_, -1)),
      buffer_(std::move(other.buffer_)) {}

KeptOpenFile& KeptOpenFile::operator=(KeptOpenFile&& other) noexcept {
    if (this != &other) {
        close_fd();
        path_ = std::move(other.path_);
        max_bytes_ = other.max_bytes_;
        fd_ = std::exchange(other.fd_, -1);
        buffer_ = std::move(other.buffer_);
    }
    return *this;
}

KeptOpenFile::~KeptOpenFile() {
    close_fd();
}

void KeptOpenFile::close_fd() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

std::optional<std::string_view> KeptOpenFile::read(std::string& error) {
    if (fd_ < 0) {
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd_ < 0) {
            error = std::strerror(errno);
            return std::nullopt;
        }
    }
    if (buffer_.empty()) buffer_.resize(4096);
    std::size_t total = 0;
    for (;;) {
        if (total == buffer_.size()) {
            if (buffer_.size() >= max_bytes_) break;  // bounded: garbage input cannot eat memory
            buffer_.resize(std::min(buffer_.size() * 2, max_bytes_));
        }
        const ssize_t n =
            ::pread(fd_, buffer_.data() + total, buffer_.size() - total, static_cast<off_t>(total));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            error = std::strerror(errno);
            close_fd();
            return std::nullopt;
        }
        if (n == 0) break;
        total += static_cast<std::size_t>(n);
    }
    return std::string_view(buffer_.data(), total);
}

}  // namespace stallscope
