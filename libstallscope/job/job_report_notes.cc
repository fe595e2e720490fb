// Plain-language notes of a job report (part of job_report.h). A finding shared by many GPUs or ports
// becomes one line with a count and the worst instance, so a 1 000-node job gets a few notes, not 1 000.
// And compress_host_list, which the notes, the text view and `watch` all name hosts with.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "libstallscope/job/job_report.h"

namespace stallscope {
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

std::string compress_host_list(std::vector<std::string> hosts) {
    struct Name {
        std::string prefix, digits;
    };
    std::vector<Name> names;
    for (const auto& h : hosts) {
        std::size_t d = h.size();
        while (d > 0 && h[d - 1] >= '0' && h[d - 1] <= '9') --d;
        names.push_back({h.substr(0, d), h.substr(d)});
    }
    std::sort(names.begin(), names.end(), [](const Name& a, const Name& b) {
        return std::forward_as_tuple(a.prefix, a.digits.size(), a.digits) <
               std::forward_as_tuple(b.prefix, b.digits.size(), b.digits);
    });
    names.erase(std::unique(names.begin(), names.end(),
                            [](const Name& a, const Name& b) {
                                return a.prefix == b.prefix && a.digits == b.digits;
                            }),
                names.end());
    std::string out;
    for (std::size_t i = 0; i < names.size();) {
        std::size_t j = i;
        while (j < names.size() && names[j].prefix == names[i].prefix && !names[i].digits.empty() &&
               !names[j].digits.empty())
            ++j;
        if (!out.empty()) out += ",";
        if (j <= i + 1) {  // no number, or the only one with this prefix
            out += names[i].prefix + names[i].digits;
            i = std::max(j, i + 1);
            continue;
        }
        // Runs of consecutive numbers of the same width: 01-03; widths never mix inside a run.
        std::string ranges;
        for (std::size_t k = i; k < j;) {
            std::size_t end = k;
            while (end + 1 < j && names[end + 1].digits.size() == names[k].digits.size() &&
                   names[end + 1].digits.size() < 19 &&
                   std::stoull(names[end + 1].digits) == std::stoull(names[end].digits) + 1)
                ++end;
            if (!ranges.empty()) ranges += ",";
            ranges += names[k].digits + (end > k ? "-" + names[end].digits : "");
            k = end + 1;
        }
        out += names[i].prefix + "[" + ranges + "]";
        i = j;
    }
    return out;
}

}  // namespace stallscope
