#include "libstallscope/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stallscope {

namespace {

std::string describe(const char* what, const std::string& path, int err) {
    return std::string("cannot ") + what + " " + path + ": " + std::strerror(err);
}

}  // namespace

std::string atomic_temp_path(const std::string& path) {
    auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + "." + base + "." + std::to_string(::getpid()) + ".tmp";
}

bool write_file_atomically(const std::string& path, std::string_view data, bool sync, std::string& error) {
    const std::string temp = atomic_temp_path(path);
    // O_NOFOLLOW: never write through a symlink planted at the temp name.
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        error = describe("create", temp, errno);
        return false;
    }
    auto fail = [&](const char* what, const std::string& name) {
        int err = errno;
        ::close(fd);
        ::unlink(temp.c_str());
        error = describe(what, name, err);
        return false;
    };
    if (::fchmod(fd, 0644) != 0) return fail("chmod", temp);
    const char* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail("write", temp);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (sync && ::fsync(fd) != 0) return fail("fsync", temp);
    if (::close(fd) != 0) {
        int err = errno;
        ::unlink(temp.c_str());
        error = describe("close", temp, err);
        return false;
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        int err = errno;
        ::unlink(temp.c_str());
        error = describe("rename to", path, err);
        return false;
    }
    return true;
}

}  // namespace stallscope
