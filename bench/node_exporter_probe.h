// Debian's prometheus-node-exporter run on a fixture tree and scraped over loopback, for bench/sample_cost:
// its CPU per scrape (utime+stime from /proc/<pid>/stat), and a check that a scrape carries the tree's
// values rather than the host's.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace stallscope::bench {

constexpr const char* kNodeExporter = "/usr/bin/prometheus-node-exporter";
constexpr int kNodeExporterWarmupScrapes = 20;

class HttpClient;

class NodeExporter {
  public:
    NodeExporter();  // out of line: HttpClient is complete only in the .cc
    ~NodeExporter();

    // Starts it on the tree; empty string on success, else why not.
    std::string start(const std::string& binary, const std::string& tree, const std::string& log_path);

    void stop();

    std::string command_line() const;
    std::string log() const;
    pid_t pid() const { return pid_; }

    std::optional<std::string> scrape(bool gzip, std::string& error, std::string* encoding = nullptr);

    // CPU per scrape over >= min_scrapes scrapes and >= kMinTicks ticks; cpu < 0 on failure (`error`).
    Cost measure(int min_scrapes, bool gzip, std::string& error);

    // Clock ticks it spends over `seconds` with no scrapes (printed; not subtracted).
    long idle_ticks(double seconds);

  private:
    pid_t pid_ = -1;
    int port_ = -1;
    std::vector<std::string> args_;
    std::string log_path_;
    std::unique_ptr<HttpClient> client_;
};

// Checks a scrape against the tree: every HCA port and netdev is there, the values are the tree's (not
// the host's), every collector succeeded. Prints what is missing and why; returns false on any gap.
bool check_scrape(const std::string& body, const std::string& tree, const std::string& log);

}  // namespace stallscope::bench
