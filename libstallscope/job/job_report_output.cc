// The JSON rendering of a JobReport (part of job_report.h): full data at any job size, summary.json.
// Keys only ever added (people and tools read summary.json); a value that was not measured is null.
// Streamed row by row (json_stream.h): at 16 000 nodes the document whole cost ~25 KB a node.
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "libstallscope/job/job_report.h"
#include "libstallscope/job/json_stream.h"

namespace stallscope {
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

// A row object whose keys are made once: fill() replaces its values in key order, a string value in
// the string already there. 270 000 rows at 16 000 nodes each built anew were a quarter of the write.
class Row {
  public:
    explicit Row(std::initializer_list<const char*> keys) : json_(Json::object()) {
        for (const char* key : keys) json_.get_ref<Json::object_t&>().emplace_back(key, nullptr);
    }
    template <class... Values>
    const Json& fill(const Values&... values) {
        auto& members = json_.get_ref<Json::object_t&>();
        if (members.size() != sizeof...(Values)) throw std::logic_error("summary row: one value per key");
        auto slot = members.begin();
        ((assign((slot++)->second, values)), ...);
        return json_;
    }

  private:
    template <class T>
    static void assign(Json& slot, const T& value) {
        slot = value;
    }
    static void assign(Json& slot, const std::string& value) {
        if (slot.is_string())
            slot.get_ref<std::string&>() = value;
        else
            slot = value;
    }
    Json json_;
};

}  // namespace

namespace {

// The merged verdict as to_json(StepVerdict) writes it, its reasons (one per node and finding: the
// bulk of a big bad job's verdict) streamed one at a time.
void stream_verdict(JsonStream& out, const StepVerdict& verdict) {
    StepVerdict head = verdict;
    head.reasons.clear();
    StepVerdict one;
    const Json fields = to_json(head);  // named: items() of a temporary would dangle
    out.open_object("verdict");
    for (const auto& [key, value] : fields.items()) {
        if (key != "reasons") {
            out.member(key, value);
            continue;
        }
        out.open_array("reasons");
        for (const auto& r : verdict.reasons) {
            one.reasons.assign(1, r);
            out.element(to_json(one)["reasons"][0]);
        }
        out.close();
    }
    out.close();
}

}  // namespace

void write_job_report_json(const JobReport& r, const JsonSink& sink, int indent) {
    JsonStream out(sink, indent);
    out.open_object();
    out.member("schema", "stallscope.summary/1");
    out.member("job_id", r.job_id);
    out.member("user", r.user);
    out.member("job_name", r.job_name);
    stream_verdict(out, r.verdict);
    out.member("worst_node", r.worst_node);
    out.member("straggler_node", r.straggler_node);
    out.member("straggler_nodes", r.straggler_nodes);
    out.member("missing_nodes", r.missing_nodes);
    // A helper still recording: the verdict is what is known so far (provisional).
    out.member("running", !r.running_nodes.empty());
    out.member("running_nodes", r.running_nodes);
    out.member("straggler_gpu", r.straggler_gpu);
    out.member("worst_port", r.worst_port);
    out.member("root_cause_node", r.root_cause_node);
    // Who a hung job waited for (null: no node kept hang evidence); `line` is what summary.txt shows first.
    if (r.hang_files.empty()) {
        out.member("hang", nullptr);
    } else {
        Json hang = to_json(r.hang);
        hang["files"] = r.hang_files;
        out.member("hang", hang);
    }
    out.member("step_count", r.steps);
    out.member("host_count", r.hosts);
    out.open_array("steps");
    for (const auto& s : r.step_summaries)
        out.element(Json{{"step_id", s.step_id},
                         {"nodes", s.nodes},
                         {"samples", s.samples},
                         {"start", s.samples ? Json(format_rfc3339(s.start_time)) : Json(nullptr)},
                         {"end", s.samples ? Json(format_rfc3339(s.end_time)) : Json(nullptr)},
                         {"duration_seconds", round2(s.duration_seconds())}});
    out.close();
    out.open_array("nodes");
    Row node_row{"host",
                 "step_id",
                 "timeline",
                 "verdict_file",
                 "source",
                 "label",
                 "node_verdict_label",
                 "confidence",
                 "top_reason",
                 "samples",
                 "gpus_allocated",
                 "gpus_measured",
                 "mean_gpu_util_pct",
                 "straggler",
                 "recording_incomplete",
                 "running",
                 "verdict_recorded"};
    for (const auto& n : r.nodes)
        out.element(node_row.fill(
            n.host, n.step_id, n.timeline_path, n.verdict_path, n.source, n.label, n.verdict.label,
            round2(n.verdict.confidence),
            n.verdict.reasons.empty() ? Json(nullptr) : Json(n.verdict.reasons[0].reason.code),
            n.verdict.samples, n.stats.gpus_allocated, n.gpus_measured, round2(n.mean_gpu_util_pct),
            n.straggler, n.incomplete, n.running, n.verdict_recorded));
    out.close();
    out.open_array("gpus");
    Row gpu_row{"host",
                "step_id",
                "index",
                "uuid",
                "name",
                "samples",
                "mean_util_pct",
                "mean_memory_pct",
                "mean_power_w",
                "max_temperature_c",
                "mean_sm_active_pct",
                "mean_tensor_active_pct",
                "mean_dram_bandwidth_pct",
                "throttle_share",
                "idle_share"};
    for (const auto& g : r.gpus)
        out.element(gpu_row.fill(g.host, g.step_id, g.index, g.uuid, g.name, g.samples,
                                 round2(g.mean_util_pct), round2(g.mean_memory_pct), round2(g.mean_power_w),
                                 round2(g.max_temperature_c), round2(g.mean_sm_active_pct),
                                 round2(g.mean_tensor_active_pct), round2(g.mean_dram_bandwidth_pct),
                                 round2(g.throttle_share), round2(g.idle_share)));
    out.close();
    out.open_array("ports");
    Row port_row{"host",
                 "step_id",
                 "port",
                 "netdev",
                 "rx_bytes",
                 "tx_bytes",
                 "cnp_per_second",
                 "ecn_marked_per_second",
                 "pause_occupancy",
                 "loss_per_million_packets"};
    for (const auto& p : r.ports)
        out.element(port_row.fill(p.host, p.step_id, p.port, p.netdev, optional_number(p.rx_bytes),
                                  optional_number(p.tx_bytes), round2(p.cnp_per_second),
                                  round2(p.ecn_marked_per_second), round2(p.pause_occupancy),
                                  round2(p.loss_per_million_packets)));
    out.close();
    out.member("notes", r.notes);
    out.member("warnings", r.warnings);
    out.close();
    out.finish();
}

std::string job_report_json_text(const JobReport& report, int indent) {
    std::string text;
    write_job_report_json(
        report, [&](std::string_view piece) { text.append(piece); }, indent);
    return text;
}

}  // namespace stallscope
