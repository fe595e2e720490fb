// Plain-language notes of a job report (part of job_report.h). A finding shared by many GPUs or ports
// becomes one line with a count and the worst instance, so a 1 000-node job gets a few notes, not 1 000.
#include <algorithm>
#include <cstdio>
#include <set>

#include "helper/job_report.h"

namespace stallscope::cli {
namespace {

constexpr std::size_t kListedInstances = 3;  // up to this many each get their own line

struct Instance {
    double value = 0;
    std::string line;  // the line this instance gets when listed alone
    std::string host;
};

void add_grouped(std::vector<std::string>& notes, std::vector<Instance> found, const char* what) {
    if (found.empty()) return;
    std::stable_sort(found.begin(), found.end(),
                     [](const Instance& a, const Instance& b) { return a.value > b.value; });
    if (found.size() <= kListedInstances) {
        for (const auto& f : found) notes.push_back(f.line);
        return;
    }
    std::set<std::string> hosts;
    for (const auto& f : found) hosts.insert(f.host);
    char buf[512];
    std::snprintf(buf, sizeof buf, "%zu %s on %zu node(s); worst: %s", found.size(), what, hosts.size(),
                  found.front().line.c_str());
    notes.push_back(buf);
}

}  // namespace

void write_job_notes(JobReport& job) {
    char buf[512];
    int idle = 0;
    double idle_share = 0;
    for (const auto& g : job.gpus)
        if (g.idle_share && *g.idle_share >= 0.3) ++idle, idle_share = std::max(idle_share, *g.idle_share);
    if (idle) {
        std::snprintf(buf, sizeof buf, "%d of %zu GPUs idle for up to %.0f %% of the step", idle,
                      job.gpus.size(), idle_share * 100);
        job.notes.push_back(buf);
    }
    std::vector<Instance> throttled, paused, lossy;
    for (const auto& g : job.gpus)
        if (g.throttle_share && *g.throttle_share >= 0.1) {
            std::snprintf(buf, sizeof buf,
                          "GPU %d on %s held back by a hardware slowdown (HW slowdown, HW thermal, power "
                          "brake) in %.0f %% of samples",
                          g.index, g.host.c_str(), *g.throttle_share * 100);
            throttled.push_back({*g.throttle_share, buf, g.host});
        }
    for (const auto& p : job.ports) {
        if (p.pause_occupancy && *p.pause_occupancy >= 0.05) {
            std::snprintf(buf, sizeof buf,
                          "PFC pause occupancy %.0f %% on %s (%s) - fabric congestion upstream",
                          *p.pause_occupancy * 100, p.port.c_str(), p.host.c_str());
            paused.push_back({*p.pause_occupancy, buf, p.host});
        }
        if (p.loss_per_million_packets && *p.loss_per_million_packets >= 1) {
            std::snprintf(buf, sizeof buf, "%.1f RDMA packets lost per million received on %s (%s)",
                          *p.loss_per_million_packets, p.port.c_str(), p.host.c_str());
            lossy.push_back({*p.loss_per_million_packets, buf, p.host});
        }
    }
    add_grouped(job.notes, throttled, "GPUs throttled in >= 10 % of samples");
    add_grouped(job.notes, paused, "ports with PFC pause occupancy >= 5 %");
    add_grouped(job.notes, lossy, "ports losing >= 1 RDMA packet per million");
    if (job.straggler_nodes.size() == 1)
        job.notes.push_back("straggler node: " + job.straggler_node +
                            " (GPU utilization well below its peers)");
    else if (!job.straggler_nodes.empty())
        job.notes.push_back(
            std::to_string(job.straggler_nodes.size()) +
            " straggler nodes (GPU utilization well below their peers; all in straggler_nodes), "
            "slowest " +
            job.straggler_node);
    if (!job.straggler_gpu.empty()) job.notes.push_back("straggler GPU: " + job.straggler_gpu);
    if (!job.missing_nodes.empty()) {
        std::string hosts = compress_host_list(job.missing_nodes);
        if (hosts.size() > 160)
            hosts = hosts.substr(0, hosts.rfind(',', 160)) + ",... (all in missing_nodes)";
        job.notes.push_back(std::to_string(job.missing_nodes.size()) +
                            " node(s) without a verdict (recording_incomplete): " + hosts);
    }
}

}  // namespace stallscope::cli
