// Alertmanager API v2 payloads, independent of HTTP (and of libcurl): URL normalisation and the
// tracker that turns profile reasons into firing/resolved alerts the way Prometheus does.
//
// Client semantics followed (Prometheus notifier): a firing alert is re-sent every resend interval with
// endsAt = now + 4 * resend interval, so if stallscope dies or stops its alerts expire on their own
// (resend_interval_for: Prometheus' 4 x max(resend_delay 1m, evaluation interval)); a reason
// that clears is sent at once with endsAt = the time it cleared (resolved), and re-sent with each resend
// for 15 minutes (Prometheus' resolvedRetention): Alertmanager ignores a resolve whose endsAt is still in
// its future (node clock ahead of it) and keeps the older endsAt, so one send is not enough. A reason
// that fires again after resolving is a new alert. Alertmanager identifies an alert by its
// label set, so labels carry nothing that changes while the condition lasts (numbers go in annotations).
//
// Labels: alertname (StallscopeFabricCongestion, from the reason code), reason (the code itself),
// severity (warning | critical), category, subject (when set), then the context labels: static labels,
// host, scheduler, job_id, step_id. Annotations: summary (the reason message), description (message,
// evidence, job and profile), evidence (compact JSON).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/snapshot.h"
#include "libstallscope/model/snapshot_json.h"  // format_rfc3339
#include "libstallscope/sinks/sink_labels.h"

namespace stallscope {

// Accepts an Alertmanager base URL (http://am:9093, with or without a route prefix like /alertmanager)
// or the full /api/v2/alerts URL (a v1 URL is rewritten to v2: v1 was removed in Alertmanager 0.27).
// Returns the POST URL, or nullopt with `error` set for a non-http(s) or empty URL.
std::optional<std::string> normalize_alertmanager_url(std::string_view url, std::string& error);

// The resend interval for a sampler that evaluates every `sample_interval_seconds` (<= 0: once): as
// Prometheus, max(60 s, the interval), so a firing alert is refreshed before its endsAt (4 x that) even
// when samples are minutes apart, and a 1 s sampler does not post every second.
double resend_interval_for(double sample_interval_seconds);

class AlertTracker {
  public:
    AlertTracker(Labels static_labels, double resend_interval_seconds, std::string generator_url = {});

    // Feed one sample. Returns the JSON array to POST now, or "" when nothing is due (no alert started
    // or ended and the resend interval has not elapsed).
    std::string update(const Snapshot& snapshot, const Profile& profile);
    // Resolve every active alert at `now` (shutdown). "" when none is active.
    std::string resolve_all(double now);

    std::size_t active() const { return active_.size(); }
    std::size_t recently_resolved() const { return resolved_.size(); }

    static constexpr double kResolvedRetentionSeconds = 15 * 60;

  private:
    struct Alert {
        std::string labels_json, annotations_json;  // rendered once per update
        double starts_at = 0;
        double resolved_at = 0;  // 0 while firing
    };
    std::string render(double now);

    Labels static_labels_;
    double resend_interval_;
    std::string generator_url_;
    std::map<std::string, Alert> active_;    // key: canonical labels JSON
    std::map<std::string, Alert> resolved_;  // resolved within the retention, re-sent with each resend
    double last_sent_ = -1;
};

}  // namespace stallscope
