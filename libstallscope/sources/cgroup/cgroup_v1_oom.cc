#include "libstallscope/sources/cgroup/cgroup_v1_oom.h"

#include <filesystem>
#include <system_error>

#include "libstallscope/sources/cgroup/cgroup_parsers.h"
#include "libstallscope/util/counter_file.h"

namespace stallscope {

std::uint64_t V1OomKillCounter::total(std::uint64_t job_own_count, std::vector<std::string>& warnings) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::size_t directories = 0;
    // Does not follow symlinks (the default); a directory that vanishes mid-walk (a step ending) ends the
    // walk of that branch with an error code, not an exception.
    fs::recursive_directory_iterator it(job_dir_, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it.depth() + 1 >= kMaxDepth) it.disable_recursion_pending();
        std::error_code type_ec;
        if (!it->is_directory(type_ec) || it->is_symlink(type_ec)) continue;
        if (++directories > kMaxDirectories) {
            if (!warned_bound_)
                warnings.push_back(job_dir_ + ": more than " + std::to_string(kMaxDirectories) +
                                   " cgroups below the job; OOM kills counted in the first ones only");
            warned_bound_ = true;
            break;
        }
        const std::string path = it->path().string();
        std::string error;
        const auto text = read_text_file(path + "/memory.oom_control", error, 4096);
        if (!text) continue;  // gone between listing and reading: its last count is kept
        if (auto kills = keyed_value(*text, "oom_kill", path + "/memory.oom_control", warnings)) {
            const std::string key = path.substr(job_dir_.size());
            if (last_.size() < kMaxDirectories || last_.count(key)) {
                auto& kept = last_[key];
                kept = std::max(kept, *kills);  // a counter only grows; a recreated dir restarts at 0
            }
        }
    }
    std::uint64_t sum = job_own_count;
    for (const auto& [dir, kills] : last_) sum += kills;
    return sum;
}

}  // namespace stallscope
