#include "libstallscope/sinks/alertmanager_payload.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "libstallscope/sinks/exposition_writer.h"

namespace stallscope {

namespace {

constexpr std::string_view kApiPath = "/api/v2/alerts";

std::string evidence_text(const Evidence& evidence) {
    std::string out;
    for (const auto& [key, value] : evidence) {
        if (!out.empty()) out += ", ";
        out += key;
        out += '=';
        if (const double* d = std::get_if<double>(&value)) {
            append_double(out, *d);
        } else {
            out += std::get<std::string>(value);
        }
    }
    return out;
}

nlohmann::json evidence_json(const Evidence& evidence) {
    nlohmann::json out = nlohmann::json::object();
    // Not a structured binding: clang 14 (Debian 12's) cannot capture one in a lambda.
    for (const auto& entry : evidence) {
        std::visit([&out, &entry](const auto& v) { out[entry.first] = v; }, entry.second);
    }
    return out;
}

// Label values and messages can hold anything a sysfs file or hostname held: never throw on bad UTF-8.
std::string dump(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::optional<std::string> normalize_alertmanager_url(std::string_view url, std::string& error) {
    while (!url.empty() && (url.back() == ' ' || url.back() == '\n')) url.remove_suffix(1);
    auto scheme_end = url.find("://");
    std::string_view scheme = scheme_end == std::string_view::npos ? "" : url.substr(0, scheme_end);
    if (scheme != "http" && scheme != "https") {
        error =
            "stallscope: alert webhook URL must start with http:// or https://: '" + std::string(url) + "'";
        return std::nullopt;
    }
    std::string_view rest = url.substr(scheme_end + 3);
    std::string_view query;
    if (auto q = rest.find_first_of("?#"); q != std::string_view::npos) {
        query = rest[q] == '?' ? rest.substr(q) : std::string_view{};
        if (auto hash = query.find('#'); hash != std::string_view::npos) query = query.substr(0, hash);
        rest = rest.substr(0, q);
    }
    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (authority.empty()) {
        error = "stallscope: alert webhook URL has no host: '" + std::string(url) + "'";
        return std::nullopt;
    }
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    if (path.ends_with(kApiPath)) {
        path.remove_suffix(kApiPath.size());
    } else if (path.ends_with("/api/v1/alerts")) {
        path.remove_suffix(std::string_view("/api/v1/alerts").size());
    }
    std::string out;
    out.reserve(url.size() + kApiPath.size());
    out.append(scheme).append("://").append(authority).append(path).append(kApiPath).append(query);
    return out;
}

double resend_interval_for(double sample_interval_seconds) {
    return std::max(60.0, sample_interval_seconds);
}

AlertTracker::AlertTracker(Labels static_labels, double resend_interval_seconds, std::string generator_url)
    : static_labels_(std::move(static_labels)),
      resend_interval_(resend_interval_seconds > 0 ? resend_interval_seconds : 60),
      generator_url_(std::move(generator_url)) {}

std::string AlertTracker::update(const Snapshot& snapshot, const Profile& profile) {
    const double now = snapshot.time;
    const Labels context = context_labels(static_labels_, snapshot);
    std::map<std::string, Alert> current;
    bool changed = false;
    for (const Reason& r : profile.reasons) {
        if (!is_alerting(r)) continue;
        nlohmann::json labels = nlohmann::json::object();
        for (const auto& [name, value] : context) labels[name] = value;
        labels["alertname"] = alert_name(r.code);
        labels["reason"] = r.code;
        labels["severity"] = r.severity;
        if (!r.category.empty()) labels["category"] = r.category;
        if (!r.subject.empty()) labels["subject"] = r.subject;
        std::string key = dump(labels);
        if (current.count(key) != 0)
            continue;  // same alert twice in one profile: keep the first (root cause)

        std::string description = r.message;
        if (!r.evidence.empty()) description += "\nEvidence: " + evidence_text(r.evidence);
        description += "\nHost " + snapshot.host;
        if (!snapshot.context.job_id.empty()) description += ", job " + snapshot.context.job_id;
        if (!snapshot.context.step_id.empty()) description += " step " + snapshot.context.step_id;
        description += ": profile " + profile.label + ", confidence ";
        append_double(description, std::round(profile.confidence * 100) / 100);
        nlohmann::json annotations = {{"summary", r.message.empty() ? r.code : r.message},
                                      {"description", description},
                                      {"evidence", dump(evidence_json(r.evidence))}};
        Alert alert{key, dump(annotations), r.first_seen > 0 ? r.first_seen : now};
        if (auto it = active_.find(key); it != active_.end()) {
            alert.starts_at = it->second.starts_at;  // keep startsAt stable while it stays active
        } else {
            changed = true;
        }
        current.emplace(std::move(key), std::move(alert));
    }
    for (auto& [key, alert] : active_) {
        if (current.count(key) != 0) continue;
        alert.resolved_at = now;
        resolved_.insert_or_assign(key, std::move(alert));
        changed = true;
    }
    for (const auto& [key, alert] : current) resolved_.erase(key);  // fired again
    std::erase_if(resolved_,
                  [now](const auto& kv) { return now - kv.second.resolved_at > kResolvedRetentionSeconds; });
    active_ = std::move(current);
    const bool anything = !active_.empty() || !resolved_.empty();
    const bool resend_due = anything && (last_sent_ < 0 || now - last_sent_ >= resend_interval_);
    if (!changed && !resend_due) return {};
    last_sent_ = now;
    return render(now);
}

std::string AlertTracker::resolve_all(double now) {
    if (active_.empty()) return {};
    for (auto& [key, alert] : active_) {
        alert.resolved_at = now;
        resolved_.insert_or_assign(key, std::move(alert));
    }
    active_.clear();
    std::string out = render(now);
    resolved_.clear();
    return out;
}

std::string AlertTracker::render(double now) {
    // Built as text from pre-rendered label/annotation objects: one payload per send, no re-parsing.
    std::string out = "[";
    auto append = [&](const Alert& a, double ends_at) {
        if (out.size() > 1) out += ',';
        out += R"({"labels":)" + a.labels_json + R"(,"annotations":)" + a.annotations_json;
        out += R"(,"startsAt":")" + format_rfc3339(std::min(a.starts_at, now)) + '"';
        out += R"(,"endsAt":")" + format_rfc3339(ends_at) + '"';
        if (!generator_url_.empty()) out += R"(,"generatorURL":)" + dump(nlohmann::json(generator_url_));
        out += '}';
    };
    for (const auto& [key, alert] : active_) append(alert, now + 4 * resend_interval_);
    // A resolve's endsAt is the millisecond it was resolved in, never the next one: RFC 3339 text rounds to
    // the nearest millisecond, and an endsAt still in Alertmanager's future when the POST lands (a fast
    // loopback POST takes less than the rounding) makes it merge the resolve as a firing alert and keep
    // the earlier endsAt 4 resends ahead: the alert stayed active after close().
    for (const auto& [key, alert] : resolved_) append(alert, std::floor(alert.resolved_at * 1000) / 1000);
    out += ']';
    return out;
}

}  // namespace stallscope
