// The JSON rendering of a JobReport (part of job_report.h): full data at any job size, summary.json.
// Keys only ever added (people and tools read summary.json); a value that was not measured is null.
#include <cmath>

#include "helper/job_report.h"

namespace stallscope::cli {
namespace {

Json round2(double v) {
    return std::round(v * 100.0) / 100.0;
}

Json round2(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? round2(*v) : Json(nullptr);
}

Json optional_number(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? Json(*v) : Json(nullptr);
}

}  // namespace

Json job_report_json(const JobReport& r) {
    Json o{
        {"schema", "stallscope.summary/1"}, {"job_id", r.job_id}, {"user", r.user}, {"job_name", r.job_name}};
    o["verdict"] = to_json(r.verdict);
    o["worst_node"] = r.worst_node;
    o["straggler_node"] = r.straggler_node;
    o["straggler_nodes"] = r.straggler_nodes;
    o["missing_nodes"] = r.missing_nodes;
    // A helper still recording: the verdict is what is known so far (provisional).
    o["running"] = !r.running_nodes.empty();
    o["running_nodes"] = r.running_nodes;
    o["straggler_gpu"] = r.straggler_gpu;
    o["worst_port"] = r.worst_port;
    o["root_cause_node"] = r.root_cause_node;
    // Who a hung job waited for (null: no node kept hang evidence); `line` is what summary.txt shows first.
    if (r.hang_files.empty()) {
        o["hang"] = nullptr;
    } else {
        o["hang"] = to_json(r.hang);
        o["hang"]["files"] = r.hang_files;
    }
    o["step_count"] = r.steps;
    o["host_count"] = r.hosts;
    o["steps"] = Json::array();
    for (const auto& s : r.step_summaries)
        o["steps"].push_back(Json{{"step_id", s.step_id},
                                  {"nodes", s.nodes},
                                  {"samples", s.samples},
                                  {"start", s.samples ? Json(format_rfc3339(s.start_time)) : Json(nullptr)},
                                  {"end", s.samples ? Json(format_rfc3339(s.end_time)) : Json(nullptr)},
                                  {"duration_seconds", round2(s.duration_seconds())}});
    o["nodes"] = Json::array();
    for (const auto& n : r.nodes)
        o["nodes"].push_back(
            Json{{"host", n.host},
                 {"step_id", n.step_id},
                 {"timeline", n.timeline_path},
                 {"verdict_file", n.verdict_path},
                 {"source", n.source},
                 {"label", n.label},
                 {"node_verdict_label", n.verdict.label},
                 {"confidence", round2(n.verdict.confidence)},
                 {"top_reason",
                  n.verdict.reasons.empty() ? Json(nullptr) : Json(n.verdict.reasons[0].reason.code)},
                 {"samples", n.verdict.samples},
                 {"gpus_allocated", n.stats.gpus_allocated},
                 {"gpus_measured", n.stats.gpus_measured()},
                 {"mean_gpu_util_pct", round2(n.mean_gpu_util_pct)},
                 {"straggler", n.straggler},
                 {"recording_incomplete", n.incomplete},
                 {"running", n.running},
                 {"verdict_recorded", n.verdict_recorded}});
    o["gpus"] = Json::array();
    for (const auto& g : r.gpus)
        o["gpus"].push_back(Json{{"host", g.host},
                                 {"step_id", g.step_id},
                                 {"index", g.index},
                                 {"uuid", g.uuid},
                                 {"name", g.name},
                                 {"samples", g.samples},
                                 {"mean_util_pct", round2(g.mean_util_pct)},
                                 {"mean_memory_pct", round2(g.mean_memory_pct)},
                                 {"mean_power_w", round2(g.mean_power_w)},
                                 {"max_temperature_c", round2(g.max_temperature_c)},
                                 {"mean_sm_active_pct", round2(g.mean_sm_active_pct)},
                                 {"mean_tensor_active_pct", round2(g.mean_tensor_active_pct)},
                                 {"mean_dram_bandwidth_pct", round2(g.mean_dram_bandwidth_pct)},
                                 {"throttle_share", round2(g.throttle_share)},
                                 {"idle_share", round2(g.idle_share)}});
    o["ports"] = Json::array();
    for (const auto& p : r.ports)
        o["ports"].push_back(Json{{"host", p.host},
                                  {"step_id", p.step_id},
                                  {"port", p.port},
                                  {"netdev", p.netdev},
                                  {"rx_bytes", optional_number(p.rx_bytes)},
                                  {"tx_bytes", optional_number(p.tx_bytes)},
                                  {"cnp_per_second", round2(p.cnp_per_second)},
                                  {"ecn_marked_per_second", round2(p.ecn_marked_per_second)},
                                  {"pause_occupancy", round2(p.pause_occupancy)},
                                  {"loss_per_million_packets", round2(p.loss_per_million_packets)}});
    o["notes"] = r.notes;
    o["warnings"] = r.warnings;
    return o;
}

}  // namespace stallscope::cli
