#include "helper/output_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stallscope::cli {
namespace {

// The output directory as the helper needs it: created by us (only the last component: a missing
// parent is an error, never created, root included), or an existing real directory (not a symlink:
// in a group-writable submit dir another user could plant stallscope-<next jobid> pointing at a
// directory they read) owned by us and writable by nobody else; then a write probe.
bool usable_output_dir(const std::string& dir, std::string& error) {
    if (dir.empty() || dir.front() != '/') {
        error = "'" + dir + "': not an absolute path";
        return false;
    }
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        error = errno == ENOENT ? dir + ": its parent directory does not exist (not created)"
                                : dir + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        error = dir + ": " + std::strerror(errno);
        return false;
    }
    if (S_ISLNK(st.st_mode)) {
        error = dir + ": is a symbolic link (not followed)";
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        error = dir + ": exists and is not a directory";
        return false;
    }
    if (st.st_uid != ::geteuid()) {
        error = dir + ": owned by uid " + std::to_string(st.st_uid) + ", not by us (uid " +
                std::to_string(::geteuid()) + ")";
        return false;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        error = dir + ": writable by group or others";
        return false;
    }
    const std::string probe = dir + "/.stallscope-write-probe." + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        error = dir + ": " + std::strerror(errno);
        return false;
    }
    ::close(fd);
    ::unlink(probe.c_str());
    return true;
}

std::string without_trailing_slashes(std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
}

bool private_dir(const std::string& dir, std::string& error) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        error = dir + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
        (st.st_mode & 077) != 0) {
        error = dir + ": exists but is not a private directory of ours";
        return false;
    }
    return true;
}

}  // namespace

std::string file_name_part(const std::string& text) {
    std::string out = text.empty() ? "unknown" : text;
    for (char& c : out)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            c = '_';
    if (out == "." || out == "..") out = "_";
    return out;
}

OutputDir fallback_output_dir(const std::string& requested, const std::string& why) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string base =
        std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/stallscope-" + std::to_string(::getuid());
    const auto slash = requested.find_last_of('/');
    const std::string leaf =
        file_name_part(slash == std::string::npos ? requested : requested.substr(slash + 1));
    std::string fallback_error;
    if (private_dir(base, fallback_error) && usable_output_dir(base + "/" + leaf, fallback_error))
        return {base + "/" + leaf,
                "output dir " + requested + " " + why + "; wrote to " + base + "/" + leaf + " instead"};
    return {"", "output dir " + requested + " " + why + " and no fallback (" + fallback_error + ")"};
}

OutputDir choose_output_dir(const std::string& requested_path) {
    const std::string requested = without_trailing_slashes(requested_path);
    std::string error;
    if (usable_output_dir(requested, error)) return {requested, ""};
    OutputDir fallback = fallback_output_dir(requested, "not writable (" + error + ")");
    // Said here too, not only in the verdict: someone running record by hand sees it at once (under the
    // plugin stderr is /dev/null until the helper log is open).
    std::fprintf(stderr, "stallscope: %s\n", fallback.warning.c_str());
    return fallback;
}

}  // namespace stallscope::cli
