#include "spank/state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "spank/config.h"
#include "spank/escape.h"

namespace stallscope::spank {

namespace {

std::string errno_text(const std::string& what) {
    return what + ": " + std::strerror(errno);
}

}  // namespace

std::string serialize_state(const JobState& s) {
    std::string groups;
    for (gid_t g : s.groups) groups += (groups.empty() ? "" : ",") + std::to_string(g);
    char mask[8];
    std::snprintf(mask, sizeof mask, "%04o", static_cast<unsigned>(s.umask & 0777));
    std::string text = "uid=" + std::to_string(s.uid) + "\ngid=" + std::to_string(s.gid) +
                       "\ngroups=" + groups + "\numask=" + mask + "\nout_dir=" + escape(s.out_dir) + "\n";
    for (const std::string& dir : s.more_out_dirs) text += "out_dir=" + escape(dir) + "\n";
    return text.size() <= kMaxStateBytes ? text : "";
}

bool storable_out_dir(std::string_view dir) {
    return !dir.empty() && dir.front() == '/' && dir.size() <= kMaxStoredDirBytes &&
           escape(dir).size() <= kMaxStoredDirBytes;
}

bool add_out_dir(JobState& state, const std::string& dir) {
    if (!storable_out_dir(dir) || dir == state.out_dir) return false;
    if (1 + state.more_out_dirs.size() >= kMaxOutDirs) return false;
    for (const std::string& known : state.more_out_dirs)
        if (known == dir) return false;
    state.more_out_dirs.push_back(dir);
    if (serialize_state(state).empty()) {  // over kMaxStateBytes (a user in very many groups)
        state.more_out_dirs.pop_back();
        return false;
    }
    return true;
}

std::vector<std::string> all_out_dirs(const JobState& state) {
    std::vector<std::string> dirs = {state.out_dir};
    dirs.insert(dirs.end(), state.more_out_dirs.begin(), state.more_out_dirs.end());
    return dirs;
}

std::optional<JobState> parse_state(std::string_view text) {
    JobState s;
    bool have_uid = false, have_gid = false, have_dir = false;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        auto eq = line.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
        unsigned n = 0;
        if (key == "uid" && parse_uint(value, 0, 4294967294U, &n)) {
            s.uid = n;
            have_uid = true;
        } else if (key == "gid" && parse_uint(value, 0, 4294967294U, &n)) {
            s.gid = n;
            have_gid = true;
        } else if (key == "groups") {
            while (!value.empty()) {
                auto comma = value.find(',');
                if (!parse_uint(value.substr(0, comma), 0, 4294967294U, &n)) return std::nullopt;
                s.groups.push_back(n);
                value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
            }
        } else if (key == "umask") {
            if (value.size() != 4 || !parse_umask(value, &s.umask)) return std::nullopt;
        } else if (key == "out_dir") {
            auto dir = unescape(value);
            if (!dir || dir->empty() || dir->front() != '/') return std::nullopt;
            if (!have_dir)
                s.out_dir = *dir;
            else if (!add_out_dir(s, *dir) && *dir != s.out_dir &&
                     std::find(s.more_out_dirs.begin(), s.more_out_dirs.end(), *dir) == s.more_out_dirs.end())
                return std::nullopt;  // more than kMaxOutDirs: not a file we wrote
            have_dir = true;
        } else {
            return std::nullopt;
        }
    }
    if (!have_uid || !have_gid || !have_dir) return std::nullopt;
    return s;
}

std::string state_path(std::string_view run_dir, std::string_view job_id) {
    return std::string(run_dir) + "/" + std::string(job_id) + ".state";
}
std::string result_path(std::string_view run_dir, std::string_view job_id) {
    return std::string(run_dir) + "/" + std::string(job_id) + ".result";
}

std::string comment_mark_path(std::string_view run_dir, std::string_view job_id) {
    return std::string(run_dir) + "/" + std::string(job_id) + ".comment";
}

std::string write_root_file(const std::string& path, std::string_view content) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return errno_text("cannot create " + tmp);
    bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
        std::string err = errno_text("cannot write " + path);
        unlink(tmp.c_str());
        return err;
    }
    return "";
}

std::optional<std::string> read_root_file(const std::string& path, std::string* error) {
    error->clear();
    int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) *error = errno_text("cannot open " + path);
        return std::nullopt;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0 ||
        st.st_size > static_cast<off_t>(kMaxRootFileBytes)) {
        *error = path + " is not a root-owned private regular file; ignoring it";
        close(fd);
        return std::nullopt;
    }
    std::string content(static_cast<std::size_t>(st.st_size), '\0');
    ssize_t n = read(fd, content.data(), content.size());
    close(fd);
    if (n < 0) {
        *error = errno_text("cannot read " + path);
        return std::nullopt;
    }
    content.resize(static_cast<std::size_t>(n));
    return content;
}

std::string make_root_dir(const std::string& path) {
    std::string partial;
    std::size_t pos = 0;
    while (pos != std::string::npos) {
        pos = path.find('/', pos + 1);
        partial = path.substr(0, pos);
        if (partial.empty()) continue;
        if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
            return errno_text("cannot create " + partial);
    }
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0)
        return path + " is not a root-owned directory writable only by root";
    return "";
}

namespace {

void remove_entries(int dirfd, int depth) {
    DIR* dir = fdopendir(dirfd);
    if (dir == nullptr) {
        close(dirfd);
        return;
    }
    while (dirent* e = readdir(dir)) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        if (unlinkat(dirfd, e->d_name, 0) == 0 || errno != EISDIR) continue;
        if (depth < 8) {
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) remove_entries(sub, depth + 1);
        }
        unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
    }
    closedir(dir);
}

}  // namespace

std::string remove_tree(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? "" : errno_text("cannot open " + path);
    remove_entries(fd, 0);
    if (rmdir(path.c_str()) != 0 && errno != ENOENT) return errno_text("cannot remove " + path);
    return "";
}

}  // namespace stallscope::spank
