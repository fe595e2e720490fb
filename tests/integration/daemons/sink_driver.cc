// Drives the real sinks for the real-daemon tests (node_exporter, Alertmanager, promtool):
//   sink_driver free-port                 print a loopback TCP port nothing listens on
//   sink_driver dashboard-exprs JSON      print every PromQL expr of a Grafana dashboard, one per line
//                                         (template variables replaced), exit 1 on invalid JSON
//   sink_driver textfile PATH             write the DGX-like test node's textfile; print its series count
//   sink_driver alert URL DIR             fire two alerts, touch DIR/fired once delivered, wait for
//                                         DIR/go, resolve the fabric alert via update(), touch DIR/resolved,
//                                         wait for DIR/close, close() (resolves the rest), touch DIR/closed
// Exit 77 (skip) for `alert` when built without libcurl.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../../sinks/sink_test_data.h"
#include "libstallscope/sinks/prometheus_textfile.h"
#include "stallscope_config.h"
#if STALLSCOPE_HAVE_CURL
#include "libstallscope/sinks/alertmanager.h"
#endif

using namespace stallscope;
namespace fs = std::filesystem;

namespace {

// A static label that exercises escaping through node_exporter's own parser.
const Labels kStaticLabels = {{"cluster", "rack \"7\" \\ row 2"}};

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return 1;
    }
    std::printf("%d\n", ntohs(addr.sin_port));
    ::close(fd);
    return 0;
}

int write_textfile(const std::string& path) {
    PrometheusTextfile sink(path, kStaticLabels);
    Snapshot s = test::full_snapshot(1700000000);
    s.gpus[2].xid = {79};
    Rates rates;
    rates.interval_seconds = 1;
    std::string error;
    if (!sink.write(s, test::slow_profile(1699999990, 40), &rates, error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    std::printf("%zu\n", sink.series());
    return 0;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
}

void collect_exprs(const nlohmann::json& j, int& count) {
    if (j.is_object()) {
        if (auto it = j.find("expr"); it != j.end() && it->is_string()) {
            std::string expr = *it;
            replace_all(expr, "$__rate_interval", "5m");
            replace_all(expr, "$host", ".*");
            replace_all(expr, "$job_id", ".*");
            replace_all(expr, "\n", " ");
            std::printf("%s\n", expr.c_str());
            ++count;
        }
        for (const auto& [key, value] : j.items()) collect_exprs(value, count);
    } else if (j.is_array()) {
        for (const auto& value : j) collect_exprs(value, count);
    }
}

int dashboard_exprs(const std::string& path) {
    std::ifstream in(path);
    nlohmann::json dashboard = nlohmann::json::parse(in, nullptr, false);
    if (dashboard.is_discarded() || !dashboard.contains("panels")) {
        std::fprintf(stderr, "sink_driver: %s is not a Grafana dashboard JSON\n", path.c_str());
        return 1;
    }
    int count = 0;
    collect_exprs(dashboard["panels"], count);
    return count > 0 ? 0 : 1;
}

#if STALLSCOPE_HAVE_CURL
bool wait_for(const fs::path& file, int seconds) {
    for (int n = 0; n < seconds * 20; ++n) {
        if (fs::exists(file)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "sink_driver: timed out waiting for %s\n", file.c_str());
    return false;
}

bool wait_posted(const AlertmanagerSink& sink, std::uint64_t n) {
    for (int i = 0; i < 200 && sink.stats().posted < n; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (sink.stats().posted >= n) return true;
    std::fprintf(stderr, "sink_driver: alert not delivered: %s\n", sink.last_error().c_str());
    return false;
}

int alert(const std::string& url, const fs::path& dir) {
    std::string error;
    AlertmanagerOptions options;
    options.resend_interval_seconds = 60;
    auto sink = AlertmanagerSink::create(url, kStaticLabels, options, error);
    if (!sink) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    Snapshot s = test::full_snapshot(now, {.gpus = 0, .rdma_ports = 0, .interfaces = 0});
    Profile both = test::slow_profile(now - 5, 2);  // fabric_congestion + gpu_thermal_throttle
    sink->update(s, both);
    if (!wait_posted(*sink, 1)) return 1;
    std::ofstream(dir / "fired") << "ok\n";
    if (!wait_for(dir / "go", 30)) return 1;
    Profile gpu_only = both;
    gpu_only.reasons.erase(gpu_only.reasons.begin());
    s.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    sink->update(s, gpu_only);
    if (!wait_posted(*sink, 2)) return 1;
    std::ofstream(dir / "resolved") << "ok\n";
    if (!wait_for(dir / "close", 30)) return 1;
    sink->close();
    if (sink->stats().posted != 3) {
        std::fprintf(stderr, "sink_driver: close() did not deliver the resolve: %s\n",
                     sink->last_error().c_str());
        return 1;
    }
    std::ofstream(dir / "closed") << "ok\n";
    return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "free-port") return free_port();
    if (mode == "textfile" && argc == 3) return write_textfile(argv[2]);
    if (mode == "dashboard-exprs" && argc == 3) return dashboard_exprs(argv[2]);
    if (mode == "alert" && argc == 4) {
#if STALLSCOPE_HAVE_CURL
        return alert(argv[2], argv[3]);
#else
        std::fprintf(stderr, "sink_driver: built without libcurl: no Alertmanager sink\n");
        return 77;
#endif
    }
    std::fprintf(stderr,
                 "usage: sink_driver free-port | textfile PATH | dashboard-exprs JSON | alert URL DIR\n");
    return 2;
}
