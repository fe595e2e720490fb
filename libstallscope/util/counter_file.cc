#include "libstallscope/util/counter_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "libstallscope/util/parse_number.h"

namespace stallscope {

CounterFile::CounterFile(std::string path) : path_(std::move(path)) {}

CounterFile::CounterFile(CounterFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), unsupported_(other.unsupported_) {}

CounterFile& CounterFile::operator=(CounterFile&& other) noexcept {
    if (this != &other) {
        close_fd();
        path_ = std::move(other.path_);
        fd_ = std::exchange(other.fd_, -1);
        unsupported_ = other.unsupported_;
    }
    return *this;
}

CounterFile::~CounterFile() {
    close_fd();
}

void CounterFile::close_fd() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

static bool is_unsupported_errno(int err) {
    return err == EINVAL || err == EOPNOTSUPP || err == EACCES || err == EPERM || err == EIO;
}

std::optional<std::string_view> CounterFile::read(std::string& error) {
    if (unsupported_) {
        error = "not supported by the device (not re-read)";
        return std::nullopt;
    }
    if (fd_ < 0) {
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd_ < 0) {
            const int err = errno;
            error = std::strerror(err);
            if (err == EACCES || err == EPERM) unsupported_ = true;
            return std::nullopt;
        }
    }
    ssize_t n;
    do {
        n = ::pread(fd_, buffer_, sizeof buffer_, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        const int err = errno;
        error = std::strerror(err);
        if (is_unsupported_errno(err) || err == EISDIR) unsupported_ = true;
        close_fd();
        return std::nullopt;
    }
    return std::string_view(buffer_, static_cast<std::size_t>(n));
}

std::optional<std::string> read_text_file(const std::string& path, std::string& error,
                                          std::size_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        error = std::strerror(errno);
        return std::nullopt;
    }
    std::string text;
    char chunk[4096];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            error = std::strerror(errno);
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) break;
        text.append(chunk, static_cast<std::size_t>(n));
        if (text.size() >= max_bytes) {
            text.resize(max_bytes);
            break;
        }
    }
    ::close(fd);
    return text;
}

std::string read_attribute_text(const std::string& path) {
    std::string error;
    auto text = read_text_file(path, error, 4096);
    return text ? std::string(trim(*text)) : std::string();
}

std::optional<std::vector<std::string>> directory_entries(const std::string& path) {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
    if (!dir) return std::nullopt;
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(dir.get())) {
        const std::string_view name = entry->d_name;
        if (name != "." && name != "..") names.emplace_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace stallscope
