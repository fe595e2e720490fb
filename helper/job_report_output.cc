// JSON and text renderings of a JobReport (part of job_report.h).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "helper/job_report.h"
#include "helper/text_output.h"

namespace stallscope::cli {
namespace {

Json round2(double v) {
    return std::round(v * 100.0) / 100.0;
}

std::string bar(double pct) {
    const int filled = static_cast<int>(std::lround(std::clamp(pct, 0.0, 100.0) / 5.0));
    return std::string(static_cast<std::size_t>(filled), '#') +
           std::string(static_cast<std::size_t>(20 - filled), '.');
}

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024 && u < 5) b /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
    return buf;
}

}  // namespace

Json job_report_json(const JobReport& r) {
    Json o{
        {"schema", "stallscope.summary/1"}, {"job_id", r.job_id}, {"user", r.user}, {"job_name", r.job_name}};
    o["verdict"] = to_json(r.verdict);
    o["worst_node"] = r.worst_node;
    o["straggler_node"] = r.straggler_node;
    o["straggler_gpu"] = r.straggler_gpu;
    o["worst_port"] = r.worst_port;
    o["nodes"] = Json::array();
    for (const auto& n : r.nodes)
        o["nodes"].push_back(Json{
            {"host", n.host},
            {"step_id", n.step_id},
            {"timeline", n.timeline_path},
            {"label", n.replay.verdict.label},
            {"confidence", round2(n.replay.verdict.confidence)},
            {"top_reason", n.replay.verdict.reasons.empty() ? Json(nullptr)
                                                            : Json(n.replay.verdict.reasons[0].reason.code)},
            {"samples", n.replay.verdict.samples},
            {"mean_gpu_util_pct", n.mean_gpu_util_pct >= 0 ? round2(n.mean_gpu_util_pct) : Json(nullptr)},
            {"verdict_recorded", n.replay.matches_recorded.has_value()}});
    o["gpus"] = Json::array();
    for (const auto& g : r.gpus)
        o["gpus"].push_back(Json{{"host", g.host},
                                 {"index", g.index},
                                 {"uuid", g.uuid},
                                 {"name", g.name},
                                 {"mean_util_pct", round2(g.mean_util_pct)},
                                 {"mean_memory_pct", round2(g.mean_memory_pct)},
                                 {"mean_power_w", round2(g.mean_power_w)},
                                 {"max_temperature_c", round2(g.max_temperature_c)},
                                 {"throttle_share", round2(g.throttle_share)},
                                 {"idle_share", round2(g.idle_share)}});
    o["ports"] = Json::array();
    for (const auto& p : r.ports)
        o["ports"].push_back(Json{{"host", p.host},
                                  {"port", p.port},
                                  {"netdev", p.netdev},
                                  {"rx_bytes", p.rx_bytes},
                                  {"tx_bytes", p.tx_bytes},
                                  {"cnp_per_second", round2(p.cnp_per_second)},
                                  {"ecn_marked_per_second", round2(p.ecn_marked_per_second)},
                                  {"pause_occupancy", round2(p.pause_occupancy)},
                                  {"loss_per_million_packets", round2(p.loss_per_million_packets)}});
    o["notes"] = r.notes;
    o["warnings"] = r.warnings;
    return o;
}

std::string job_report_text(const JobReport& r) {
    std::string out;
    char buf[512];
    std::size_t gpu_count = r.gpus.size();
    std::snprintf(buf, sizeof buf, "Job %s (%s) user %s: %zu node(s), %zu GPU(s), %.0f s recorded\n",
                  r.job_id.empty() ? "?" : r.job_id.c_str(), r.job_name.c_str(),
                  r.user.empty() ? "?" : r.user.c_str(), r.nodes.size(), gpu_count,
                  r.verdict.duration_seconds());
    out += buf;
    out += "Verdict: " + verdict_text(r.verdict);
    if (!r.worst_node.empty()) out += "Worst node: " + r.worst_node + "\n";
    if (!r.notes.empty()) {
        out += "\nNotes:\n";
        for (const auto& n : r.notes) out += "  * " + n + "\n";
    }
    out += "\nNodes:\n";
    for (const auto& n : r.nodes) {
        std::snprintf(buf, sizeof buf, "  %-16s step %-6s %-9s conf %.2f  %5d samples  GPU util %s\n",
                      n.host.c_str(), n.step_id.c_str(), n.replay.verdict.label.c_str(),
                      n.replay.verdict.confidence, n.replay.verdict.samples,
                      n.mean_gpu_util_pct >= 0
                          ? (std::to_string(static_cast<int>(n.mean_gpu_util_pct)) + " %").c_str()
                          : "-");
        out += buf;
    }
    if (!r.gpus.empty()) {
        out +=
            "\nGPUs (mean over the step):\n  host             gpu  util                      memory   power  "
            "  maxT  throttle\n";
        for (const auto& g : r.gpus) {
            std::snprintf(buf, sizeof buf, "  %-16s %3d  %s %3.0f%%  %5.1f%%  %6.1fW  %4.0fC  %5.1f%%\n",
                          g.host.c_str(), g.index, bar(g.mean_util_pct).c_str(), g.mean_util_pct,
                          g.mean_memory_pct, g.mean_power_w, g.max_temperature_c, g.throttle_share * 100);
            out += buf;
        }
    }
    if (!r.ports.empty()) {
        out +=
            "\nFabric ports:\n  host             port        netdev         rx         tx     CNP/s   ECN/s  "
            "pause  loss/M\n";
        for (const auto& p : r.ports) {
            std::snprintf(buf, sizeof buf, "  %-16s %-11s %-10s %10s %10s %8.1f %7.1f %5.1f%% %7.2f\n",
                          p.host.c_str(), p.port.c_str(), p.netdev.empty() ? "-" : p.netdev.c_str(),
                          human_bytes(p.rx_bytes).c_str(), human_bytes(p.tx_bytes).c_str(), p.cnp_per_second,
                          p.ecn_marked_per_second, p.pause_occupancy * 100, p.loss_per_million_packets);
            out += buf;
        }
    }
    if (!r.warnings.empty()) {
        out += "\nWarnings:\n";
        for (const auto& w : r.warnings) out += "  " + w + "\n";
    }
    return out;
}

}  // namespace stallscope::cli
