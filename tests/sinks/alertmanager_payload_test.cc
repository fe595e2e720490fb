#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "libstallscope/sinks/alertmanager_payload.h"
#include "libstallscope/sinks/sink_labels.h"
#include "sink_test_data.h"

using namespace stallscope;
using nlohmann::json;

TEST_CASE("Alertmanager URLs: a base URL or the full v2 path, both normalised to the v2 endpoint") {
    const std::pair<const char*, const char*> cases[] = {
        {"http://am:9093", "http://am:9093/api/v2/alerts"},
        {"http://am:9093/", "http://am:9093/api/v2/alerts"},
        {"http://am:9093/api/v2/alerts", "http://am:9093/api/v2/alerts"},
        {"http://am:9093/api/v2/alerts/", "http://am:9093/api/v2/alerts"},
        {"https://obs.example.org/alertmanager", "https://obs.example.org/alertmanager/api/v2/alerts"},
        {"https://obs.example.org/alertmanager/api/v1/alerts",
         "https://obs.example.org/alertmanager/api/v2/alerts"},
        {"http://[::1]:9093?tenant=a#frag", "http://[::1]:9093/api/v2/alerts?tenant=a"},
        {"http://user:pw@am:9093/api/v2/alerts\n", "http://user:pw@am:9093/api/v2/alerts"},
    };
    for (const auto& c : cases) {
        const auto& in = c.first;  // not a structured binding: clang 14 cannot capture one in INFO
        const auto& want = c.second;
        std::string error;
        auto got = normalize_alertmanager_url(in, error);
        INFO(in);
        REQUIRE(got.has_value());
        CHECK(*got == want);
    }
    for (const char* bad :
         {"", "am:9093", "ftp://am/", "file:///etc/passwd", "http://", "http:///api/v2/alerts"}) {
        std::string error;
        INFO(bad);
        CHECK_FALSE(normalize_alertmanager_url(bad, error).has_value());
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("Alert names are CamelCase from the reason code") {
    CHECK(alert_name("fabric_congestion") == "StallscopeFabricCongestion");
    CHECK(alert_name("gpu_xid_79") == "StallscopeGpuXid79");
    CHECK(alert_name("pfc-pause storm") == "StallscopePfcPauseStorm");
}

TEST_CASE("RFC 3339 timestamps are UTC with milliseconds") {
    CHECK(format_rfc3339(0) == "1970-01-01T00:00:00.000Z");
    CHECK(format_rfc3339(1714564800.25) == "2024-05-01T12:00:00.250Z");
    CHECK(format_rfc3339(1714564800.9996) == "2024-05-01T12:00:01.000Z");
}

TEST_CASE("A firing reason becomes one v2 alert with labels, annotations, startsAt and a future endsAt") {
    AlertTracker tracker({{"cluster", "east"}, {"alertname", "must-not-win"}}, 60, "http://grafana/d/x");
    Snapshot s = test::full_snapshot(1000, {.gpus = 0, .rdma_ports = 0, .interfaces = 0});
    Profile p = test::slow_profile(990, 3);  // fabric (warning), gpu (warning), nccl (info)
    std::string body = tracker.update(s, p);
    REQUIRE_FALSE(body.empty());
    json alerts = json::parse(body);
    REQUIRE(alerts.is_array());
    REQUIRE(alerts.size() == 2);  // the info reason is not an alert
    CHECK(tracker.active() == 2);
    const json* fabric = nullptr;
    for (const json& a : alerts) {
        if (a["labels"]["reason"] == "fabric_congestion") fabric = &a;
    }
    REQUIRE(fabric != nullptr);
    const json& labels = (*fabric)["labels"];
    CHECK(labels["alertname"] == "StallscopeFabricCongestion");
    CHECK(labels["severity"] == "warning");
    CHECK(labels["category"] == "fabric");
    CHECK(labels["subject"] == "mlx5_0/1");
    CHECK(labels["host"] == "gpu-node-07");
    CHECK(labels["scheduler"] == "slurm");
    CHECK(labels["job_id"] == "4242");
    CHECK(labels["step_id"] == "0");
    CHECK(labels["cluster"] == "east");
    for (const auto& [k, v] : labels.items()) CHECK(v.is_string());
    const json& ann = (*fabric)["annotations"];
    CHECK(ann["summary"] == p.reasons[0].message);
    std::string description = ann["description"];
    CHECK(description.find("rp_cnp_handled_per_s=1200") != std::string::npos);
    CHECK(description.find("job 4242 step 0") != std::string::npos);
    CHECK(json::parse(std::string(ann["evidence"]))["threshold_per_s"] == 100);
    CHECK((*fabric)["startsAt"] == format_rfc3339(990));
    CHECK((*fabric)["endsAt"] == format_rfc3339(1000 + 4 * 60));
    CHECK((*fabric)["generatorURL"] == "http://grafana/d/x");
}

TEST_CASE("Steady alerts are re-sent only every resend interval; a cleared reason is resolved at once") {
    AlertTracker tracker({}, 30);
    Snapshot s = test::full_snapshot(1000, {.gpus = 0, .rdma_ports = 0, .interfaces = 0});
    Profile p = test::slow_profile(990, 1);
    CHECK_FALSE(tracker.update(s, p).empty());
    s.time = 1010;
    CHECK(tracker.update(s, p).empty());  // nothing changed, not due
    s.time = 1030;
    std::string resend = tracker.update(s, p);
    REQUIRE_FALSE(resend.empty());
    json again = json::parse(resend);
    CHECK(again[0]["startsAt"] == format_rfc3339(990));  // stable across re-sends
    CHECK(again[0]["endsAt"] == format_rfc3339(1030 + 120));

    s.time = 1031;
    json resolved = json::parse(tracker.update(s, Profile{}));
    REQUIRE(resolved.size() == 1);
    CHECK(resolved[0]["labels"]["alertname"] == "StallscopeFabricCongestion");
    CHECK(resolved[0]["endsAt"] == format_rfc3339(1031));
    CHECK(tracker.active() == 0);
    s.time = 1040;
    CHECK(tracker.update(s, Profile{}).empty());  // not due
    // Re-sent with each resend for 15 minutes, endsAt unchanged: Alertmanager drops a resolve whose
    // endsAt is still in its future, so a node clock slightly ahead must not leave the alert firing.
    s.time = 1062;
    json again_resolved = json::parse(tracker.update(s, Profile{}));
    REQUIRE(again_resolved.size() == 1);
    CHECK(again_resolved[0]["endsAt"] == format_rfc3339(1031));
    CHECK(tracker.recently_resolved() == 1);
    s.time = 1031 + 15 * 60 + 1;
    CHECK(tracker.update(s, Profile{}).empty());  // retention over: silence
    CHECK(tracker.recently_resolved() == 0);
}

TEST_CASE("A reason that fires again after resolving is firing again, not resolved") {
    AlertTracker tracker({}, 60);
    Snapshot s;
    s.time = 100;
    Profile p = test::slow_profile(100, 1);
    tracker.update(s, p);
    s.time = 110;
    tracker.update(s, Profile{});
    s.time = 120;
    json body = json::parse(tracker.update(s, p));
    REQUIRE(body.size() == 1);
    CHECK(body[0]["endsAt"] == format_rfc3339(120 + 240));
    CHECK(tracker.recently_resolved() == 0);
}

TEST_CASE("A severity change is a new alert: the old label set resolves, the new one fires") {
    AlertTracker tracker({}, 60);
    Snapshot s;
    s.time = 100;
    s.host = "n1";
    Profile p = test::slow_profile(100, 1);
    tracker.update(s, p);
    p.reasons[0].severity = "critical";
    s.time = 101;
    json body = json::parse(tracker.update(s, p));
    REQUIRE(body.size() == 2);
    int firing = 0, resolved = 0;
    for (const json& a : body) {
        if (a["endsAt"] == format_rfc3339(101)) {
            ++resolved;
            CHECK(a["labels"]["severity"] == "warning");
        } else {
            ++firing;
            CHECK(a["labels"]["severity"] == "critical");
        }
    }
    CHECK(firing == 1);
    CHECK(resolved == 1);
}

TEST_CASE("Duplicate reasons for one subject make one alert; resolve_all ends every active alert") {
    AlertTracker tracker({}, 60);
    Snapshot s;
    s.time = 50;
    Profile p = test::slow_profile(40, 1);
    p.reasons.push_back(p.reasons[0]);
    p.reasons.back().message = "same alert, other words";
    CHECK(json::parse(tracker.update(s, p)).size() == 1);
    json closing = json::parse(tracker.resolve_all(60));
    REQUIRE(closing.size() == 1);
    CHECK(closing[0]["endsAt"] == format_rfc3339(60));
    CHECK(tracker.resolve_all(61).empty());
}

TEST_CASE("A resolve's endsAt is never in the future: the millisecond it happened in, not the nearest") {
    // RFC 3339 text rounds to the nearest millisecond: 60.9996 would read 61.000, which Alertmanager, when
    // the POST lands within that 0.4 ms, takes for a still-firing alert (it kept the alert active).
    AlertTracker tracker({}, 60);
    Snapshot s;
    s.time = 50;
    CHECK(json::parse(tracker.update(s, test::slow_profile(40, 1))).size() == 1);
    const json closing = json::parse(tracker.resolve_all(60.9996));
    REQUIRE(closing.size() == 1);
    CHECK(closing[0]["endsAt"] == format_rfc3339(60.999));
}

TEST_CASE("Invalid UTF-8 in a message does not throw; it is replaced") {
    AlertTracker tracker({}, 60);
    Snapshot s;
    s.time = 1;
    Profile p = test::slow_profile(1, 1);
    p.reasons[0].message = "bad \xff\xfe bytes";
    std::string body;
    CHECK_NOTHROW(body = tracker.update(s, p));
    CHECK(json::accept(body));
}
