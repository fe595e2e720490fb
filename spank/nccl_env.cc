#include "spank/nccl_env.h"

#include "spank/helper_spec.h"

namespace stallscope::spank {

namespace {

std::string join_dir(std::string_view dir, std::string_view leaf) {
    std::string d(dir);
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    return (d == "/" ? "" : d) + "/" + std::string(leaf);
}

std::string absolute_against(std::string_view path, std::string_view cwd) {
    if (path.empty() || path.front() == '/' || cwd.empty() || cwd.front() != '/') return std::string(path);
    return join_dir(cwd, path);
}

}  // namespace

bool find_env(const std::vector<std::string>& env, std::string_view name, std::string* value) {
    for (const std::string& e : env) {
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
            if (value) *value = e.substr(name.size() + 1);
            return true;
        }
    }
    return false;
}

bool nccl_env_enabled(const PluginConfig& config, const std::vector<std::string>& job_env,
                      std::string* note) {
    std::string v;
    if (!find_env(job_env, "STALLSCOPE_NCCL_ENV", &v)) return config.nccl_env;
    if (v == "1" || v == "0") return v == "1";
    if (note)
        *note = "STALLSCOPE_NCCL_ENV='" + v.substr(0, 64) +
                "' is not 0 or 1; using nccl_env=" + (config.nccl_env ? "1" : "0");
    return config.nccl_env;
}

unsigned nccl_ras_port(const PluginConfig& config, std::uint32_t job_id) {
    unsigned first = config.nccl_ras_port_first, last = config.nccl_ras_port_last;
    if (last < first) last = first;
    return first + static_cast<unsigned>(job_id % (last - first + 1u));
}

NcclEnvPlan plan_nccl_env(const PluginConfig& config, const std::vector<std::string>& job_env,
                          std::uint32_t job_id, std::string_view out_dir) {
    NcclEnvPlan plan;
    plan.enabled = nccl_env_enabled(config, job_env, &plan.note);
    if (!plan.enabled) return plan;
    auto has = [&](std::string_view name) { return find_env(job_env, name, nullptr); };
    auto add = [&](std::string_view name, std::string value) {
        if (!has(name)) plan.set.emplace_back(std::string(name), std::move(value));
    };
    // RAS: a per-job port so two jobs on one node never answer each other's queries.
    add("NCCL_RAS_ADDR", "localhost:" + std::to_string(nccl_ras_port(config, job_id)));
    add("NCCL_RAS_ENABLE", "1");
    // Logs: only when the user asked for no NCCL output of their own. A user's NCCL_DEBUG without
    // NCCL_DEBUG_FILE goes to their stdout as before; redirecting it would hide what they asked for.
    if (!has("NCCL_DEBUG")) {
        add("NCCL_DEBUG", "WARN");
        add("NCCL_DEBUG_FILE", join_dir(out_dir, "nccl.%h.%p.log"));
    }
    // Inspector: only with an admin-installed plugin, and never over the user's own profiler or an
    // explicit NCCL_INSPECTOR_ENABLE=0. The default dump interval writes nothing at all.
    std::string enable;
    bool inspector_off = find_env(job_env, "NCCL_INSPECTOR_ENABLE", &enable) && enable == "0";
    if (!config.nccl_inspector_plugin.empty() && !has("NCCL_PROFILER_PLUGIN") && !inspector_off) {
        add("NCCL_PROFILER_PLUGIN", config.nccl_inspector_plugin);
        add("NCCL_INSPECTOR_ENABLE", "1");
        add("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "1000000");
        add("NCCL_INSPECTOR_DUMP_DIR", join_dir(out_dir, "nccl-inspector"));
    }
    // PyTorch flight recorder dump prefix (TORCH_FR_DUMP_TEMP_FILE is the newer name of
    // TORCH_NCCL_DEBUG_INFO_TEMP_FILE): both, unless the user set either.
    if (!has("TORCH_FR_DUMP_TEMP_FILE") && !has("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")) {
        add("TORCH_FR_DUMP_TEMP_FILE", join_dir(out_dir, "torch-fr-"));
        add("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", join_dir(out_dir, "torch-fr-"));
    }
    return plan;
}

std::string nccl_debug_glob(std::string_view pattern, std::string_view host, std::string_view cwd) {
    std::string short_host(host.substr(0, host.find('.')));
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 == pattern.size()) {
            out += pattern[i];
            continue;
        }
        char c = pattern[++i];
        if (c == 'h')
            out += short_host.empty() ? "*" : short_host;
        else if (c == '%')
            out += '%';
        else
            out += '*';
    }
    return absolute_against(out, cwd);
}

void add_helper_nccl_env(std::vector<std::string>& helper_env, std::string_view host, std::string_view cwd) {
    std::string v;
    if (find_env(helper_env, "NCCL_INSPECTOR_DUMP_DIR", &v) && !v.empty())
        set_env(helper_env, "NCCL_INSPECTOR_DUMP_DIR", absolute_against(v, cwd));
    if (!find_env(helper_env, "NCCL_DEBUG_FILE", &v) || v.empty()) return;
    set_env(helper_env, "NCCL_DEBUG_FILE", absolute_against(v, cwd));
    if (!find_env(helper_env, "STALLSCOPE_NCCL_LOGS", nullptr))
        set_env(helper_env, "STALLSCOPE_NCCL_LOGS", nccl_debug_glob(v, host, cwd));
}

}  // namespace stallscope::spank
