#include "libstallscope/sinks/sink_labels.h"

#include <algorithm>

namespace stallscope {

namespace {

bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

}  // namespace

bool valid_label_name(std::string_view name) {
    if (name.empty() || name.starts_with("__")) return false;
    if (!is_alpha(name[0]) && name[0] != '_') return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
}

Labels context_labels(const Labels& static_labels, const Snapshot& snapshot, bool with_job) {
    Labels out;
    out.reserve(static_labels.size() + 4);
    auto has = [&out](std::string_view name) {
        return std::any_of(out.begin(), out.end(), [name](const auto& kv) { return kv.first == name; });
    };
    for (const auto& [name, value] : static_labels) {
        if (valid_label_name(name) && !has(name)) out.emplace_back(name, value);
    }
    struct Known {
        const char* name;
        const std::string* value;
        bool per_job;
    };
    const Known known[] = {
        {"host", &snapshot.host, false},
        {"scheduler", &snapshot.context.scheduler, false},
        {"job_id", &snapshot.context.job_id, true},
        {"step_id", &snapshot.context.step_id, true},
    };
    for (const auto& [name, value, per_job] : known) {
        if (per_job && !with_job) continue;
        if (!value->empty() && !has(name)) out.emplace_back(name, *value);
    }
    return out;
}

bool is_alerting(const Reason& reason) {
    return reason.severity == "warning" || reason.severity == "critical";
}

std::string alert_name(std::string_view reason_code) {
    std::string out = "Stallscope";
    bool upper = true;
    for (char c : reason_code) {
        if (!is_alpha(c) && !is_digit(c)) {
            upper = true;
            continue;
        }
        if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        out.push_back(c);
        upper = false;
    }
    return out;
}

}  // namespace stallscope
