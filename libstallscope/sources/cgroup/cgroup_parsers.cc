#include "libstallscope/sources/cgroup/cgroup_parsers.h"

#include "libstallscope/util/parse_number.h"

namespace stallscope {
std::optional<SlurmCgroupPath> find_slurm_dirs(std::string_view path) {
    std::vector<std::string_view> parts;
    while (!path.empty()) {
        const auto slash = path.find('/');
        if (slash != 0) parts.push_back(path.substr(0, slash));
        if (slash == std::string_view::npos) break;
        path.remove_prefix(slash + 1);
    }
    auto join = [&](std::size_t count) {
        std::string out;
        for (std::size_t i = 0; i < count; ++i) (out += '/') += parts[i];
        return out;
    };
    // Walk up: the innermost step_* wins (task_N/user dirs below it are the tasks', not Slurm's steps).
    for (std::size_t i = parts.size(); i-- > 1;) {
        if (!parts[i].starts_with("step_")) continue;
        SlurmCgroupPath out;
        out.step_dir = join(i + 1);
        out.job_dir = join(i);
        out.step_id = std::string(parts[i].substr(5));
        const std::string_view job = parts[i - 1];
        out.job_id = std::string(job.starts_with("job_") ? job.substr(4) : job);
        return out;
    }
    for (std::size_t i = parts.size(); i-- > 0;) {
        if (!parts[i].starts_with("job_") || parts[i].size() == 4) continue;
        SlurmCgroupPath out;
        out.job_dir = join(i + 1);
        out.job_id = std::string(parts[i].substr(4));
        return out;
    }
    return std::nullopt;
}

ProcessCgroup parse_proc_cgroup(std::string_view text) {
    ProcessCgroup v2, v1_memory, any_v1;
    for_each_line(text, [&](std::string_view line) {
        const auto first = line.find(':');
        if (first == std::string_view::npos) return;
        const auto second = line.find(':', first + 1);
        if (second == std::string_view::npos) return;
        const std::string_view controllers = line.substr(first + 1, second - first - 1);
        const std::string path(line.substr(second + 1));
        if (line.substr(0, first) == "0" && controllers.empty()) {
            v2 = {2, path};
            return;
        }
        // v1: "4:memory:/slurm/uid_1000/job_42/step_0/task_0"; controller lists are comma separated.
        std::string_view rest = controllers;
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            if (rest.substr(0, comma) == "memory") v1_memory = {1, path};
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
        if (any_v1.version == 0) any_v1 = {1, path};
    });
    // Hybrid hosts list both; the hierarchy that holds the Slurm job is the one Slurm uses.
    if (v2.version && find_slurm_dirs(v2.path)) return v2;
    if (v1_memory.version && find_slurm_dirs(v1_memory.path)) return v1_memory;
    if (v2.version) return v2;
    return v1_memory.version ? v1_memory : any_v1;
}

std::optional<std::uint64_t> keyed_value(std::string_view text, std::string_view key, std::string_view file,
                                         std::vector<std::string>& warnings) {
    std::optional<std::uint64_t> out;
    bool found = false;
    for_each_line(text, [&](std::string_view line) {
        if (found) return;
        const auto space = line.find(' ');
        if (space == std::string_view::npos || line.substr(0, space) != key) return;
        found = true;
        const std::string_view value = line.substr(space + 1);
        out = parse_u64(value);
        if (!out)
            warnings.push_back(std::string(file) + ": " + std::string(key) + ": " +
                               describe_bad_counter(value));
    });
    return out;
}

Counter single_value(std::string_view text, std::string_view file, std::vector<std::string>& warnings) {
    if (trim(text) == "max") return std::nullopt;  // no limit: null, and nothing wrong
    auto value = parse_u64(text);
    if (!value) warnings.push_back(std::string(file) + ": " + describe_bad_counter(text));
    return value;
}

std::optional<std::uint32_t> status_uid(std::string_view text) {
    std::optional<std::uint32_t> uid;
    for_each_line(text, [&](std::string_view line) {
        if (uid || !line.starts_with("Uid:")) return;
        std::string_view rest = trim(line.substr(4));
        const auto end = rest.find_first_of(" \t");
        if (auto v = parse_u64(rest.substr(0, end)); v && *v <= 0xffffffffULL)
            uid = static_cast<std::uint32_t>(*v);
    });
    return uid;
}

}  // namespace stallscope
