#include "helper/output_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "libstallscope/util/atomic_file.h"

namespace stallscope::cli {
namespace {

bool writable_dir(const std::string& dir, std::string& error) {
    if (!make_directories(dir, error)) return false;
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
    if (private_dir(base, fallback_error) && writable_dir(base + "/" + leaf, fallback_error))
        return {base + "/" + leaf,
                "output dir " + requested + " " + why + "; wrote to " + base + "/" + leaf + " instead"};
    return {"", "output dir " + requested + " " + why + " and no fallback (" + fallback_error + ")"};
}

OutputDir choose_output_dir(const std::string& requested) {
    std::string error;
    if (writable_dir(requested, error)) return {requested, ""};
    return fallback_output_dir(requested, "not writable (" + error + ")");
}

}  // namespace stallscope::cli
