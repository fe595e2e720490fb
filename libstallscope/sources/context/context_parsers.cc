#include "libstallscope/sources/context/context_parsers.h"

#include <array>
#include <initializer_list>

#include "libstallscope/util/parse_number.h"

namespace stallscope {

bool is_context_variable(std::string_view name) {
    static constexpr std::array<std::string_view, 18> kNames{"SLURM_JOB_ID",
                                                             "SLURM_JOBID",
                                                             "SLURM_STEP_ID",
                                                             "SLURM_STEPID",
                                                             "SLURM_JOB_NAME",
                                                             "SLURM_JOB_USER",
                                                             "USER",
                                                             "SLURM_JOB_NODELIST",
                                                             "SLURM_NODELIST",
                                                             "SLURM_NODEID",
                                                             "SLURM_STEP_GPUS",
                                                             "SLURM_JOB_GPUS",
                                                             "CUDA_VISIBLE_DEVICES",
                                                             "ROCR_VISIBLE_DEVICES",
                                                             "POD_NAME",
                                                             "POD_NAMESPACE",
                                                             "HOSTNAME",
                                                             "KUBERNETES_SERVICE_HOST"};
    for (auto n : kNames)
        if (n == name) return true;
    return false;
}

Environment parse_environ(std::string_view text) {
    Environment env;
    while (!text.empty()) {
        const auto end = text.find('\0');
        const std::string_view entry = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        const auto eq = entry.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        const auto name = entry.substr(0, eq);
        if (is_context_variable(name))
            env.insert_or_assign(std::string(name), std::string(entry.substr(eq + 1)));
    }
    return env;
}

std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> out;
    while (true) {
        const auto comma = text.find(',');
        const auto item = trim(text.substr(0, comma));
        if (!item.empty()) out.emplace_back(item);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return out;
}

namespace {

// The first non-empty value among `names`, else "".
std::string first_of(const Environment& env, std::initializer_list<std::string_view> names) {
    for (auto name : names)
        if (auto it = env.find(name); it != env.end() && !it->second.empty()) return it->second;
    return {};
}

}  // namespace

JobContext slurm_context_from_environment(const Environment& env) {
    JobContext ctx;
    ctx.job_id = first_of(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
    ctx.user = first_of(env, {"SLURM_JOB_USER", "USER"});
    ctx.visible_devices = split_list(first_of(env, {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}));
    if (ctx.job_id.empty()) return ctx;
    ctx.scheduler = "slurm";
    ctx.step_id = first_of(env, {"SLURM_STEP_ID", "SLURM_STEPID"});
    ctx.job_name = first_of(env, {"SLURM_JOB_NAME"});
    ctx.nodelist = first_of(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
    ctx.node_id = first_of(env, {"SLURM_NODEID"});
    ctx.gpus = split_list(first_of(env, {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}));
    return ctx;
}

}  // namespace stallscope
