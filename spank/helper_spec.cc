#include "spank/helper_spec.h"

#include <pwd.h>

#include <set>

namespace stallscope::spank {

namespace {

bool absolute(std::string_view p) {
    return !p.empty() && p.front() == '/';
}

std::string trim_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

// Expands %u (user name of the job's uid), %j (job id), %% in an admin-written template; other %x stay as
// written.
std::string expand_template(std::string_view tmpl, const JobFacts& job, bool* had_job) {
    std::string out;
    for (std::size_t i = 0; i < tmpl.size(); ++i) {
        if (tmpl[i] != '%' || i + 1 == tmpl.size()) {
            out += tmpl[i];
            continue;
        }
        char c = tmpl[++i];
        if (c == 'u')
            out += user_name_for_uid(job.uid);
        else if (c == 'j') {
            out += job.job_id;
            *had_job = true;
        } else if (c == '%')
            out += '%';
        else {
            out += '%';
            out += c;
        }
    }
    return out;
}

}  // namespace

std::string user_name_for_uid(uid_t uid) {
    if (uid == kUnknownUid) return "unknown-uid";
    passwd pw{}, *found = nullptr;
    std::string buf(16384, '\0');
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_name &&
        found->pw_name[0] != '\0') {
        std::string name = found->pw_name;
        // A passwd name is admin data, but it becomes a path component: no separators or dot-dirs.
        if (name.find('/') == std::string::npos && name != "." && name != "..") return name;
    }
    return std::to_string(uid);
}

std::string resolve_output_dir(const PluginConfig& config, const JobFacts& job) {
    std::string leaf = "stallscope-" + job.job_id;
    if (config.output_policy == OutputPolicy::template_) {
        bool had_job = false;
        std::string base = trim_slashes(expand_template(config.output_template, job, &had_job));
        return had_job ? base : (base == "/" ? "" : base) + "/" + leaf;
    }
    std::string first = config.output_policy == OutputPolicy::cwd ? job.cwd : job.submit_dir;
    std::string second = config.output_policy == OutputPolicy::cwd ? job.submit_dir : job.cwd;
    std::string base = absolute(first) ? first : absolute(second) ? second : "/tmp";
    base = trim_slashes(base);
    return (base == "/" ? "" : base) + "/" + leaf;
}

std::string job_run_dir(const PluginConfig& config, std::string_view job_id) {
    return trim_slashes(config.run_dir) + "/" + std::string(job_id);
}

std::vector<std::string> record_argv(const PluginConfig& config, std::string_view out_dir, unsigned interval,
                                     std::string_view job_id) {
    return {config.helper,        "record",
            "--out-dir",          std::string(out_dir),
            "--interval-seconds", std::to_string(interval),
            "--lock-file",        job_run_dir(config, job_id) + "/sampler.lock",
            "--liveness-fd",      std::to_string(kLivenessFd),
            "--timeline-format",  std::to_string(config.timeline_format)};
}

std::vector<std::string> summarize_argv(const PluginConfig& config, std::string_view dir) {
    return {config.helper, "summarize", std::string(dir)};
}

bool is_test_seam(std::string_view name) {
    static const std::set<std::string_view> kUserKnobs = {
        "STALLSCOPE_NCCL_ENV", "STALLSCOPE_NCCL_LOGS", "STALLSCOPE_NCCL_RAS", "STALLSCOPE_NCCL_RAS_INTERVAL",
        "STALLSCOPE_NCCL_RAS_DELAY"};
    return name.substr(0, 11) == "STALLSCOPE_" && kUserKnobs.count(name) == 0;
}

bool helper_env_wanted(std::string_view name, bool allow_test_env) {
    static const std::set<std::string_view> kNames = {"SLURM_JOB_ID",
                                                      "SLURM_STEP_ID",
                                                      "SLURM_NODEID",
                                                      "SLURM_JOB_NODELIST",
                                                      "SLURM_JOB_NAME",
                                                      "SLURM_JOB_USER",
                                                      "SLURM_JOB_GPUS",
                                                      "SLURM_STEP_GPUS",
                                                      "SLURM_GPUS_ON_NODE",
                                                      "SLURM_SUBMIT_DIR",
                                                      "SLURM_CLUSTER_NAME",
                                                      "SLURMD_NODENAME",
                                                      "CUDA_VISIBLE_DEVICES",
                                                      "ROCR_VISIBLE_DEVICES",
                                                      "NCCL_RAS_ADDR",
                                                      "NCCL_RAS_ENABLE",
                                                      "NCCL_DEBUG_FILE",
                                                      "NCCL_INSPECTOR_DUMP_DIR",
                                                      "HOME",
                                                      "USER",
                                                      "LANG",
                                                      "TZ"};
    if (name.substr(0, 11) == "STALLSCOPE_") return allow_test_env || !is_test_seam(name);
    return kNames.count(name) != 0;
}

std::vector<std::string> helper_env(const std::vector<std::string>& job_env, bool allow_test_env) {
    std::vector<std::string> env;
    std::set<std::string> seen;
    for (const std::string& entry : job_env) {
        auto eq = entry.find('=');
        if (eq == std::string::npos || eq == 0) continue;
        std::string name = entry.substr(0, eq);
        if (!helper_env_wanted(name, allow_test_env) || !seen.insert(name).second) continue;
        env.push_back(entry);
    }
    env.push_back("PATH=" + std::string(kHelperPath));
    return env;
}

}  // namespace stallscope::spank

namespace stallscope::spank {

void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value) {
    std::string entry = std::string(name) + "=" + std::string(value);
    for (std::string& e : env) {
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
            e = entry;
            return;
        }
    }
    env.push_back(entry);
}

}  // namespace stallscope::spank
