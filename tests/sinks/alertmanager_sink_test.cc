// The Alertmanager sink against a loopback HTTP listener: payload, resolve, refused, hung, retries.
// Every wait is bounded; timing checks have wide margins for a loaded 2-core CI machine.
#include <doctest/doctest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "libstallscope/sinks/alertmanager.h"
#include "libstallscope/sinks/curl_library.h"
#include "loopback_http.h"
#include "sink_test_data.h"

using namespace stallscope;
using namespace std::chrono_literals;
using nlohmann::json;
using test::LoopbackHttpServer;

namespace {

AlertmanagerOptions fast_options() {
    AlertmanagerOptions o;
    o.connect_timeout = 500ms;
    o.request_timeout = 1000ms;
    o.retry_backoff = 20ms;
    o.close_timeout = 2000ms;
    o.clock = [] { return 2000.0; };
    return o;
}

std::unique_ptr<AlertmanagerSink> make_sink(const std::string& url,
                                            AlertmanagerOptions options = fast_options()) {
    std::string error;
    auto sink = AlertmanagerSink::create(url, {{"cluster", "test"}}, std::move(options), error);
    REQUIRE_MESSAGE(sink != nullptr, error);
    return sink;
}

Snapshot snapshot_at(double time) {
    return test::full_snapshot(time, {.gpus = 0, .rdma_ports = 0, .interfaces = 0});
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("A firing reason is POSTed as a v2 alert array and resolved on close()") {
    LoopbackHttpServer server;
    auto sink = make_sink(server.url() + "/");
    CHECK(sink->url() == server.url() + "/api/v2/alerts");
    sink->update(snapshot_at(1000), test::slow_profile(990, 1));
    REQUIRE(server.wait_for_requests(1, 5s));
    auto req = server.requests()[0];
    CHECK(req.method == "POST");
    CHECK(req.path == "/api/v2/alerts");
    CHECK(req.content_type == "application/json");
    json alerts = json::parse(req.body);
    REQUIRE(alerts.size() == 1);
    CHECK(alerts[0]["labels"]["alertname"] == "StallscopeFabricCongestion");
    CHECK(alerts[0]["labels"]["cluster"] == "test");
    CHECK(alerts[0]["endsAt"] == format_rfc3339(1000 + 240));

    sink->close();
    REQUIRE(server.requests().size() == 2);
    json resolved = json::parse(server.requests()[1].body);
    CHECK(resolved[0]["labels"] == alerts[0]["labels"]);
    CHECK(resolved[0]["endsAt"] == format_rfc3339(2000));  // options.clock at close()
    auto stats = sink->stats();
    CHECK(stats.posted == 2);
    CHECK(stats.failed == 0);
}

TEST_CASE(
    "Without resolve_on_close (the periodic CLI) close() delivers what is queued and resolves nothing") {
    // A monitor that stops has not seen the fault clear: the alert stays firing until its endsAt lapses.
    LoopbackHttpServer server;
    AlertmanagerOptions options = fast_options();
    options.resolve_on_close = false;
    options.resend_interval_seconds = resend_interval_for(1);  // a 1 s sampler
    auto sink = make_sink(server.url(), options);
    sink->update(snapshot_at(1000), test::slow_profile(990, 1));
    sink->update(snapshot_at(1001), test::slow_profile(990, 1));  // within the resend interval: nothing
    sink->close();
    REQUIRE(server.requests().size() == 1);
    json alerts = json::parse(server.requests()[0].body);
    REQUIRE(alerts.size() == 1);
    CHECK(alerts[0]["endsAt"] == format_rfc3339(1000 + 4 * 60));  // Prometheus: 4 x max(1m, interval)
    CHECK(sink->stats().posted == 1);
}

TEST_CASE(
    "The resend interval follows the sampling interval past a minute, as Prometheus' evaluation interval") {
    CHECK(resend_interval_for(0) == 60);
    CHECK(resend_interval_for(1) == 60);
    CHECK(resend_interval_for(300) == 300);  // endsAt 20 min ahead: a 5 min sampler never lets it lapse
}

TEST_CASE("A clearing reason is resolved by the next update, without waiting for close()") {
    LoopbackHttpServer server;
    auto sink = make_sink(server.url() + "/api/v2/alerts");
    sink->update(snapshot_at(1000), test::slow_profile(990, 1));
    sink->update(snapshot_at(1005), Profile{});
    REQUIRE(server.wait_for_requests(2, 5s));
    json resolved = json::parse(server.requests()[1].body);
    CHECK(resolved[0]["endsAt"] == format_rfc3339(1005));
    sink->close();
    CHECK(server.requests().size() == 2);  // nothing left to resolve
}

TEST_CASE("Info-only profiles send nothing") {
    LoopbackHttpServer server;
    auto sink = make_sink(server.url());
    Profile p = test::slow_profile(1, 3);
    p.reasons.erase(p.reasons.begin(), p.reasons.begin() + 2);  // keep the info reason only
    sink->update(snapshot_at(1000), p);
    sink->close();
    CHECK(server.requests().empty());
}

TEST_CASE("A 500 is retried with backoff; a 400 is not") {
    SUBCASE("500 then 200") {
        LoopbackHttpServer server(LoopbackHttpServer::Mode::ok, 1);
        auto sink = make_sink(server.url());
        sink->update(snapshot_at(1000), test::slow_profile(990, 1));
        REQUIRE(server.wait_for_requests(2, 5s));
        sink->close();
        auto stats = sink->stats();
        CHECK(stats.retries == 1);
        CHECK(stats.posted == 2);  // the alert, then its resolve
        CHECK(stats.failed == 0);
    }
    SUBCASE("400") {
        LoopbackHttpServer server(LoopbackHttpServer::Mode::bad_request);
        auto sink = make_sink(server.url());
        sink->update(snapshot_at(1000), test::slow_profile(990, 1));
        sink->close();
        auto stats = sink->stats();
        CHECK(stats.retries == 0);
        CHECK(stats.failed == 2);
        CHECK(sink->last_error().find("HTTP 400") != std::string::npos);
        CHECK(server.requests().size() == 2);
    }
}

TEST_CASE("A refused connection costs bounded retries and never blocks update() or close()") {
    auto sink = make_sink("http://127.0.0.1:" + std::to_string(LoopbackHttpServer::closed_port()));
    auto start = std::chrono::steady_clock::now();
    sink->update(snapshot_at(1000), test::slow_profile(990, 1));
    CHECK(seconds_since(start) < 0.5);
    sink->close();
    CHECK(seconds_since(start) < 3.0);
    auto stats = sink->stats();
    CHECK(stats.posted == 0);
    CHECK(stats.failed == 2);
    CHECK(stats.retries == 4);  // 3 attempts for each of the two payloads
    CHECK(sink->last_error().find("127.0.0.1") != std::string::npos);
}

TEST_CASE("A hung Alertmanager: update() stays fast, the full queue drops oldest, close() is bounded") {
    LoopbackHttpServer server(LoopbackHttpServer::Mode::hang);
    AlertmanagerOptions options = fast_options();
    options.request_timeout = 30s;  // longer than the test: only close()'s deadline may end the request
    options.close_timeout = 500ms;
    options.queue_capacity = 2;
    auto sink = make_sink(server.url(), options);
    double slowest = 0;
    for (int n = 0; n < 20; ++n) {
        // A new alert each sample makes every update produce a payload.
        Profile p = test::slow_profile(1000, 1);
        p.reasons[0].subject = "mlx5_" + std::to_string(n) + "/1";
        auto start = std::chrono::steady_clock::now();
        sink->update(snapshot_at(1000 + n), p);
        slowest = std::max(slowest, seconds_since(start));
    }
    CHECK(slowest < 0.1);
    REQUIRE(server.wait_for_requests(1, 5s));
    auto start = std::chrono::steady_clock::now();
    sink->close();
    CHECK(seconds_since(start) < 0.5 + 0.4);  // deadline + abandoning the transfer in flight
    auto stats = sink->stats();
    CHECK(stats.dropped >= 17);  // 20 payloads + 1 resolve, one in flight, queue of 2
    CHECK(stats.posted == 0);
}

TEST_CASE("An unusable URL is refused at creation") {
    std::string error;
    CHECK(AlertmanagerSink::create("am:9093", {}, {}, error) == nullptr);
    CHECK(error.find("http://") != std::string::npos);
}

TEST_CASE("libcurl is loaded when a sink is created; a missing or foreign library is a clear error") {
    std::string error;
    REQUIRE_MESSAGE(curl_library(error) != nullptr, error);
    CHECK(curl_library(error) == curl_library(error));  // loaded once

    CHECK(load_curl_library("libstallscope-no-such-curl.so.4", error) == nullptr);
    CHECK(error.find("needs libcurl (libstallscope-no-such-curl.so.4") != std::string::npos);
    CHECK(error.find("libcurl4") != std::string::npos);  // the package to install

    error.clear();
    CHECK(load_curl_library("libm.so.6", error) == nullptr);  // loads, but has no curl_* function
    CHECK(error.find("libm.so.6 is not a usable libcurl (no curl_global_init") != std::string::npos);
}
