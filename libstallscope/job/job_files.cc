#include "libstallscope/job/job_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <set>
#include <utility>

namespace stallscope {
namespace {

// "timeline.0.gpu07.jsonl" -> "0.gpu07" (also .jsonl.zst and a future extension); "" when not one.
std::string timeline_stem(const std::string& name) {
    if (!name.starts_with("timeline.") || name.ends_with(".tmp")) return "";
    const std::string rest = name.substr(9);
    const auto ext = rest.find(".jsonl");
    return ext == std::string::npos || ext == 0 ? "" : rest.substr(0, ext);
}

std::string verdict_stem(const std::string& name) {
    if (!name.starts_with("verdict.") || !name.ends_with(".json") || name.size() <= 13) return "";
    return name.substr(8, name.size() - 13);
}

// The job writes its directory: one inode under many names (hard links) would be read once per name,
// and any number of names would each cost a recording. So each regular file is read once whatever its
// names, and a directory gives at most kMaxRecordingsPerDirectory recordings.
using InodeSet = std::set<std::pair<dev_t, ino_t>>;

// False for a second name of a regular file already taken; anything else (a symlink, a FIFO) is left
// to the reader, which refuses it with its own message.
bool first_name_of(int dir_fd, const char* name, InodeSet& seen) {
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return true;
    return seen.insert({st.st_dev, st.st_ino}).second;
}

}  // namespace

std::string base_name(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::map<std::string, RecordingFiles> find_recordings(const std::vector<std::string>& inputs,
                                                      std::vector<std::string>& warnings) {
    std::map<std::string, RecordingFiles> found;
    InodeSet seen;
    int explicit_files = 0;
    for (const auto& in : inputs) {
        struct stat st {};
        if (::stat(in.c_str(), &st) != 0) {
            warnings.push_back(in + ": not found");
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (!first_name_of(AT_FDCWD, in.c_str(), seen)) {
                warnings.push_back(in + ": the same file as an earlier input; read once");
                continue;
            }
            const std::string name = base_name(in);
            if (name.starts_with("helper.") || name.starts_with("summary.")) {
                warnings.push_back(in + ": not a timeline or verdict file; skipped");
                continue;
            }
            // Explicit files: a verdict and a timeline of the same <step>.<host> in one directory pair up;
            // a file named otherwise is a timeline of its own.
            const std::string v_stem = verdict_stem(name), t_stem = timeline_stem(name);
            const std::string stem = v_stem.empty() ? t_stem : v_stem;
            const std::string key = stem.empty() ? "\x01" + std::to_string(explicit_files++) + ":" + in
                                                 : "\x01" + in.substr(0, in.size() - name.size()) + stem;
            (v_stem.empty() ? found[key].timeline : found[key].verdict) = in;
            found[key].stem = stem;
            continue;
        }
        std::size_t before = found.size(), entries = 0, links = 0, over = 0;
        if (DIR* d = ::opendir(in.c_str())) {
            while (dirent* e = ::readdir(d)) {
                if (++entries > kMaxDirectoryEntries) {
                    warnings.push_back(in + ": more than " + std::to_string(kMaxDirectoryEntries) +
                                       " entries; the rest is not read");
                    break;
                }
                const std::string name = e->d_name;
                const std::string v_stem = verdict_stem(name), t_stem = timeline_stem(name);
                const std::string& stem = v_stem.empty() ? t_stem : v_stem;
                if (stem.empty()) continue;
                if (!first_name_of(::dirfd(d), e->d_name, seen)) {
                    ++links;
                    continue;
                }
                const std::string key = in + '\x1f' + stem;
                if (!found.contains(key) && found.size() - before >= kMaxRecordingsPerDirectory) {
                    ++over;
                    continue;
                }
                RecordingFiles& files = found[key];
                (v_stem.empty() ? files.timeline : files.verdict) = in + "/" + name;
                files.stem = stem;
            }
            ::closedir(d);
        }
        if (links > 0)
            warnings.push_back(in + ": " + std::to_string(links) +
                               " name(s) of a file already read (hard links); each file is read once");
        if (over > 0)
            warnings.push_back(in + ": more than " + std::to_string(kMaxRecordingsPerDirectory) +
                               " recordings; " + std::to_string(over) + " file(s) not read");
        if (found.size() == before) warnings.push_back(in + ": no verdict.*.json or timeline.*.jsonl files");
    }
    return found;
}

}  // namespace stallscope
