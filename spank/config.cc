#include "spank/config.h"

#include <charconv>

#ifndef STALLSCOPE_SPANK_DEFAULT_HELPER
#define STALLSCOPE_SPANK_DEFAULT_HELPER "/usr/bin/stallscope"
#endif
#ifndef STALLSCOPE_SPANK_DEFAULT_JOB_READER
#define STALLSCOPE_SPANK_DEFAULT_JOB_READER "/usr/libexec/stallscope-slurm-job"
#endif

namespace stallscope::spank {

PluginConfig default_config() {
    PluginConfig config;
    config.helper = STALLSCOPE_SPANK_DEFAULT_HELPER;
    config.job_reader = STALLSCOPE_SPANK_DEFAULT_JOB_READER;
    return config;
}

bool parse_uint(std::string_view text, unsigned lo, unsigned hi, unsigned* out) {
    if (text.empty() || text.front() < '0' || text.front() > '9') return false;
    unsigned long long value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return false;
    if (value < lo || value > hi) return false;
    *out = static_cast<unsigned>(value);
    return true;
}

bool parse_umask(std::string_view text, mode_t* out) {
    if (text.empty() || text.size() > 4) return false;
    unsigned value = 0;
    for (char c : text) {
        if (c < '0' || c > '7') return false;
        value = value * 8 + static_cast<unsigned>(c - '0');
    }
    if (value > 0777) return false;
    *out = static_cast<mode_t>(value);
    return true;
}

unsigned task_exit_worst_case(const PluginConfig& config) {
    // stop_helper: stop_timeout, then 1 s for the final read after SIGKILL and 0.2 s to reap; the comment
    // write: one deadline of kScontrolCallsPerComment × (scontrol_timeout + 1 s to kill and reap), which
    // the last call may overrun by its exec (≤ 2 s, process.cc).
    return config.stop_timeout + 2 + kScontrolCallsPerComment * (config.scontrol_timeout + 1) + 2;
}

namespace {

struct UintKey {
    std::string_view name;
    unsigned PluginConfig::*field;
    unsigned lo, hi;
};

constexpr UintKey kUintKeys[] = {
    {"default_interval", &PluginConfig::default_interval, 1, 86400},
    {"stop_timeout", &PluginConfig::stop_timeout, 0, 300},
    {"epilog_timeout", &PluginConfig::epilog_timeout, 1, 600},
    {"scontrol_timeout", &PluginConfig::scontrol_timeout, 1, 120},
    {"task_exit_budget", &PluginConfig::task_exit_budget, 12, 900},
    {"min_interval", &PluginConfig::min_interval, 1, 86400},
    {"max_interval", &PluginConfig::max_interval, 1, 86400},
};

std::string quoted(std::string_view s) {
    return "'" + std::string(s) + "'";
}

bool is_absolute_path(std::string_view v) {
    return !v.empty() && v.front() == '/';
}

}  // namespace

ConfigParse parse_plugin_args(const std::vector<std::string_view>& args) {
    ConfigParse result{default_config(), {}};
    PluginConfig& c = result.config;
    auto bad = [&](std::string_view arg, std::string_view why) {
        result.errors.push_back("plugstack.conf argument " + quoted(arg) + ": " + std::string(why));
    };
    for (std::string_view arg : args) {
        auto eq = arg.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            bad(arg, "expected key=value");
            continue;
        }
        std::string_view key = arg.substr(0, eq), value = arg.substr(eq + 1);
        bool handled = false;
        for (const UintKey& k : kUintKeys) {
            if (key != k.name) continue;
            handled = true;
            if (!parse_uint(value, k.lo, k.hi, &(c.*k.field)))
                bad(arg,
                    "expected a whole number from " + std::to_string(k.lo) + " to " + std::to_string(k.hi));
        }
        if (handled) continue;
        if (key == "helper") {
            if (is_absolute_path(value))
                c.helper = value;
            else
                bad(arg, "helper must be an absolute path");
        } else if (key == "run_dir") {
            if (is_absolute_path(value) && value != "/")
                c.run_dir = value;
            else
                bad(arg, "run_dir must be an absolute path other than /");
        } else if (key == "output_dir") {
            if (value == "submit")
                c.output_policy = OutputPolicy::submit;
            else if (value == "cwd")
                c.output_policy = OutputPolicy::cwd;
            else if (is_absolute_path(value)) {
                c.output_policy = OutputPolicy::template_;
                c.output_template = value;
            } else
                bad(arg, "expected submit, cwd or an absolute path template");
        } else if (key == "comment") {
            if (value == "admin")
                c.comment = CommentTarget::admin;
            else if (value == "user")
                c.comment = CommentTarget::user;
            else if (value == "none")
                c.comment = CommentTarget::none;
            else
                bad(arg, "expected admin, user or none");
        } else if (key == "always_on" || key == "nccl_env" || key == "allow_test_env" ||
                   key == "flight_recorder") {
            bool* flag = key == "always_on"         ? &c.always_on
                         : key == "nccl_env"        ? &c.nccl_env
                         : key == "flight_recorder" ? &c.flight_recorder
                                                    : &c.allow_test_env;
            if (value == "0" || value == "1")
                *flag = value == "1";
            else
                bad(arg, "expected 0 or 1");
        } else if (key == "timeline_format") {
            if (value == "1" || value == "2")
                c.timeline_format = value == "1" ? 1 : 2;
            else
                bad(arg, "expected 1 (timeline.*.jsonl) or 2 (timeline.*.jsonl.zst)");
        } else if (key == "scontrol") {
            if (is_absolute_path(value))
                c.scontrol = value;
            else
                bad(arg, "scontrol must be an absolute path");
        } else if (key == "job_reader") {
            if (is_absolute_path(value))
                c.job_reader = value;
            else
                bad(arg, "job_reader must be an absolute path");
        } else if (key == "nccl_inspector_plugin") {
            if (is_absolute_path(value))
                c.nccl_inspector_plugin = value;
            else
                bad(arg, "nccl_inspector_plugin must be an absolute path");
        } else if (key == "nccl_ras_ports") {
            auto dash = value.find('-');
            unsigned first = 0, last = 0;
            if (dash != std::string_view::npos && parse_uint(value.substr(0, dash), 1024, 65535, &first) &&
                parse_uint(value.substr(dash + 1), 1024, 65535, &last) && first <= last) {
                c.nccl_ras_port_first = first;
                c.nccl_ras_port_last = last;
            } else {
                bad(arg, "expected FIRST-LAST, ports from 1024 to 65535, FIRST <= LAST");
            }
        } else {
            bad(arg, "unknown key " + quoted(key));
        }
    }
    // Ranges must be consistent, or option validation would reject everything.
    PluginConfig defaults = default_config();
    if (c.min_interval > c.max_interval) {
        result.errors.push_back("plugstack.conf: min_interval=" + std::to_string(c.min_interval) +
                                " is above max_interval=" + std::to_string(c.max_interval) +
                                "; using the defaults " + std::to_string(defaults.min_interval) + ".." +
                                std::to_string(defaults.max_interval));
        c.min_interval = defaults.min_interval;
        c.max_interval = defaults.max_interval;
    }
    if (task_exit_worst_case(c) > c.task_exit_budget) {
        // Shrink the scontrol timeout first (a comment write that gives up is logged and retried by the
        // slurmctld epilog), then the stop timeout; never beyond the minimum of each.
        const std::string before = "stop_timeout=" + std::to_string(c.stop_timeout) +
                                   " + scontrol_timeout=" + std::to_string(c.scontrol_timeout) +
                                   " can hold the last task_exit for " +
                                   std::to_string(task_exit_worst_case(c)) +
                                   " s, above task_exit_budget=" + std::to_string(c.task_exit_budget);
        while (task_exit_worst_case(c) > c.task_exit_budget && c.scontrol_timeout > 1) --c.scontrol_timeout;
        while (task_exit_worst_case(c) > c.task_exit_budget && c.stop_timeout > 0) --c.stop_timeout;
        result.errors.push_back("plugstack.conf: " + before +
                                "; using stop_timeout=" + std::to_string(c.stop_timeout) +
                                " scontrol_timeout=" + std::to_string(c.scontrol_timeout));
    }
    if (c.default_interval < c.min_interval || c.default_interval > c.max_interval) {
        unsigned clamped = c.default_interval < c.min_interval ? c.min_interval : c.max_interval;
        result.errors.push_back("plugstack.conf: default_interval=" + std::to_string(c.default_interval) +
                                " is outside min_interval..max_interval; using " + std::to_string(clamped));
        c.default_interval = clamped;
    }
    return result;
}

}  // namespace stallscope::spank
