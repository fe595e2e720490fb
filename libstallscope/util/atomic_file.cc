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

// A file descriptor closed on every path out.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Opens directory `dir` one component at a time with O_NOFOLLOW. A component that is a symlink is
// followed only when root or our effective uid owns the link (a site's /home -> /export/home, our own
// links): a link someone else owns, in a directory they can write, could be swapped between our checks
// and our write. Returns the fd or -1 with errno set (ELOOP: a link we do not follow).
int open_directory(const std::string& dir) {
    const bool absolute = !dir.empty() && dir.front() == '/';
    int fd = ::open(absolute ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (std::size_t at = 0; fd >= 0 && at < dir.size();) {
        const std::size_t slash = dir.find('/', at);
        const std::string part = dir.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
        at = slash == std::string::npos ? dir.size() : slash + 1;
        if (part.empty() || part == ".") continue;
        int next = ::openat(fd, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            struct stat link {};
            const int saved = errno;
            if (::fstatat(fd, part.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode) &&
                (link.st_uid == 0 || link.st_uid == ::geteuid()))
                next = ::openat(fd, part.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
            else
                errno = S_ISLNK(link.st_mode) ? ELOOP : saved;
        }
        const int saved = errno;
        ::close(fd);
        fd = next;
        errno = saved;
    }
    return fd;
}

}  // namespace

std::string atomic_temp_path(const std::string& path) {
    auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + "." + base + "." + std::to_string(::getpid()) + ".tmp";
}

bool write_file_atomically(const std::string& path, std::string_view data, bool sync, std::string& error,
                           FileMode mode) {
    return write_file_atomically(
        path, [&](const AtomicWrite& write) { write(data); }, sync, error, mode);
}

bool write_file_atomically(const std::string& path,
                           const std::function<void(const AtomicWrite& write)>& produce, bool sync,
                           std::string& error, FileMode mode) {
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty() || base == "." || base == "..") {
        error = "cannot write " + path + ": not a file name";
        return false;
    }
    Fd dir_fd{open_directory(dir)};
    if (dir_fd.fd < 0) {
        error = "cannot write " + path + ": " + dir + ": " +
                (errno == ELOOP ? "goes through a symbolic link owned by another user; not followed"
                                : std::strerror(errno));
        return false;
    }
    // O_EXCL: a name that exists (planted by the directory's owner, or left by a crash) is never opened:
    // the write fails and says which name is in the way.
    const std::string temp = "." + base + "." + std::to_string(::getpid()) + ".tmp";
    int fd = ::openat(dir_fd.fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    const int create_error = errno;
    const std::string temp_path = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + temp;
    if (fd < 0) {
        error = describe("create", temp_path, create_error);
        return false;
    }
    auto fail = [&](const char* what, const std::string& name, int err) {
        if (fd >= 0) ::close(fd);
        ::unlinkat(dir_fd.fd, temp.c_str(), 0);
        error = describe(what, name, err);
        return false;
    };
    if (mode == FileMode::world_readable && ::fchmod(fd, 0644) != 0) return fail("chmod", temp_path, errno);
    int write_error = 0;
    const AtomicWrite write = [&](std::string_view data) {
        const char* p = data.data();
        std::size_t left = data.size();
        while (write_error == 0 && left > 0) {
            ssize_t n = ::write(fd, p, left);
            if (n < 0) {
                if (errno != EINTR) write_error = errno;
                continue;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
    };
    try {
        produce(write);
    } catch (...) {  // the producer failed (out of memory): no temp file left behind
        fail("write", temp_path, 0);
        throw;
    }
    if (write_error != 0) return fail("write", temp_path, write_error);
    if (sync && ::fsync(fd) != 0) return fail("fsync", temp_path, errno);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) return fail("close", temp_path, errno);
    if (::renameat(dir_fd.fd, temp.c_str(), dir_fd.fd, base.c_str()) != 0)
        return fail("rename to", path, errno);
    return true;
}

}  // namespace stallscope
