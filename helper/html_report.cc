#include "helper/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "helper/cli_args.h"
#include "helper/html_report_svg.h"
#include "helper/job_lookup.h"
#include "helper/progress_bar.h"
#include "helper/subcommands.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/printable.h"
#include "stallscope_config.h"

namespace stallscope::cli {
namespace {

std::vector<double> values_of(const BucketedSeries& s, std::size_t buckets) {
    std::vector<double> out(buckets);
    for (std::size_t b = 0; b < buckets; ++b) out[b] = s.at(b);
    return out;
}

// Where each step starts, when there are several (one line per host runs through all of them).
std::vector<svg::Mark> step_marks(const JobSeries& s) {
    std::vector<svg::Mark> marks;
    if (s.steps.size() > 1)
        for (const auto& step : s.steps)
            marks.push_back(
                {step.start_time - s.start_time, step.end_time - s.start_time, "step " + step.step_id});
    return marks;
}

std::string header(const JobReport& r) {
    char buf[256];
    // Hosts, not recordings: a host that ran two steps is one node.
    std::snprintf(buf, sizeof buf,
                  "%d node(s), %d step(s), %zu GPU(s), %.0f s recorded, %d samples, confidence %.2f", r.hosts,
                  r.steps, r.gpus.size(), r.verdict.duration_seconds(), r.verdict.samples,
                  r.verdict.confidence);
    std::string out = "<header><h1>stallscope: job " + svg::escape(r.job_id.empty() ? "?" : r.job_id) + " " +
                      svg::escape(r.job_name) + " <span class='badge " + svg::escape(r.verdict.label) +
                      "' id=verdict-label>" + svg::escape(r.verdict.label) + "</span></h1><div>user " +
                      svg::escape(r.user.empty() ? "?" : r.user) + " &middot; " + buf + " &middot; from " +
                      svg::escape(format_rfc3339(r.verdict.start_time)) + "</div>";
    if (!r.hang_files.empty())  // who a hung job waited for, before any reason
        out += "<p id=hang class=alarm><b>" + svg::escape(r.hang.line) + "</b></p>";
    if (!r.verdict.reasons.empty()) {
        const auto& top = r.verdict.reasons.front().reason;
        out += "<p id=top-reason><b>" + svg::escape(top.code) + "</b>: " + svg::escape(top.message) + "</p>";
    }
    if (!r.straggler_node.empty())
        out += "<p>Straggler node: <b class=alarm>" + svg::escape(r.straggler_node) + "</b></p>";
    if (!r.worst_node.empty() && r.worst_node != r.straggler_node)
        out += "<p>Worst node: <b class=alarm>" + svg::escape(r.worst_node) + "</b></p>";
    return out + "</header>\n";
}

std::string reasons_section(const JobReport& r, double seconds) {
    std::vector<svg::Span> spans;
    std::string list = "<ul class=reasons>";
    for (const auto& s : r.verdict.reasons) {
        const std::string label = s.reason.code + (s.reason.subject.empty() ? "" : " @ " + s.reason.subject);
        if (spans.size() < 12)
            spans.push_back({label, s.reason.severity, s.reason.first_seen - r.verdict.start_time,
                             std::max(s.last_seen, s.reason.first_seen) - r.verdict.start_time});
        list += "<li><b>" + svg::escape(label) + "</b> [" + svg::escape(s.reason.severity) + ", " +
                svg::escape(std::to_string(static_cast<int>(std::lround(s.share * 100)))) +
                " % of the step]: " + svg::escape(s.reason.message) + "</li>";
    }
    list += "</ul>";
    return "<h2>Reasons</h2>" + svg::span_chart("reasons-chart", "Reasons on the time axis", seconds, spans) +
           list;
}

std::string gpu_charts(const JobReport& r, const JobSeries& s, double seconds) {
    std::vector<svg::Line> util, power;
    for (const auto& n : s.nodes) {
        const bool marked = n.host == r.straggler_node;
        const std::string prefix = s.nodes.size() > 1 ? n.host + " " : "";
        for (const auto& [index, series] : n.gpu_util_pct)
            util.push_back({prefix + "GPU " + std::to_string(index), values_of(series, s.buckets), marked});
        for (const auto& [index, series] : n.gpu_power_w)
            power.push_back({prefix + "GPU " + std::to_string(index), values_of(series, s.buckets), marked});
    }
    if (util.empty()) return "<h2>GPUs</h2><p>No GPU was measured in this recording.</p>";
    return "<h2>GPUs</h2>" +
           svg::line_chart("gpu-util", "GPU utilization", {seconds, "%", 100, step_marks(s)}, util) +
           svg::line_chart("gpu-power", "GPU power", {seconds, "W", 0, step_marks(s)}, power);
}

std::string fabric_chart(const JobReport& r, const JobSeries& s, double seconds) {
    std::vector<svg::Line> lines;
    for (const auto& n : s.nodes)
        for (const auto& [port, series] : n.port_gbps) {
            const std::string name = (s.nodes.size() > 1 ? n.host + ":" : "") + port;
            lines.push_back({name, values_of(series, s.buckets), name == r.worst_port});
        }
    if (lines.empty()) return "<h2>Fabric</h2><p>No RDMA port was measured in this recording.</p>";
    return "<h2>Fabric</h2>" + svg::line_chart("fabric-rates", "RDMA port traffic, rx + tx",
                                               {seconds, "Gbit/s", 0, step_marks(s)}, lines);
}

std::string heatmap_section(const JobReport& r, const JobSeries& s, double seconds) {
    if (s.nodes.size() < 2) return "";
    std::vector<svg::Line> rows;
    const std::string marked = !r.straggler_node.empty() ? r.straggler_node : r.worst_node;
    for (const auto& n : s.nodes)
        rows.push_back({n.host, values_of(n.mean_gpu_util_pct, s.buckets),
                        n.host == marked || std::find(r.straggler_nodes.begin(), r.straggler_nodes.end(),
                                                      n.host) != r.straggler_nodes.end()});
    return "<h2>Nodes over time</h2>" + svg::heatmap("node-heatmap", "Mean GPU utilization per node", seconds,
                                                     rows,
                                                     r.straggler_node.empty() ? "worst node" : "straggler");
}

std::string tables(const JobReport& r) {
    std::vector<std::vector<svg::Cell>> nodes, gpus, ports;
    // A value that was not measured is shown as "-", never as 0.
    auto opt = [](const std::optional<double>& v, int decimals, double scale = 1) {
        return v ? svg::num(*v * scale, decimals) : svg::text("-");
    };
    for (const auto& n : r.nodes)
        nodes.push_back({svg::text(n.host), svg::text(n.step_id), svg::text(n.label),
                         svg::num(n.verdict.confidence, 2), svg::num(n.verdict.samples, 0),
                         opt(n.mean_gpu_util_pct, 2)});
    for (const auto& g : r.gpus)
        gpus.push_back({svg::text(g.host), svg::text(g.step_id), svg::num(g.index, 0), svg::text(g.name),
                        opt(g.mean_util_pct, 2), opt(g.mean_sm_active_pct, 2),
                        opt(g.mean_tensor_active_pct, 2), opt(g.mean_dram_bandwidth_pct, 2),
                        opt(g.mean_memory_pct, 2), opt(g.mean_power_w, 2), opt(g.max_temperature_c, 2),
                        opt(g.throttle_share, 2, 100), opt(g.idle_share, 2, 100)});
    for (const auto& p : r.ports)
        ports.push_back({svg::text(p.host), svg::text(p.step_id), svg::text(p.port), svg::text(p.netdev),
                         opt(p.rx_bytes, 3, 1e-9), opt(p.tx_bytes, 3, 1e-9), opt(p.cnp_per_second, 2),
                         opt(p.ecn_marked_per_second, 2), opt(p.pause_occupancy, 2, 100),
                         opt(p.loss_per_million_packets, 2)});
    std::string out =
        "<h2>Tables</h2><p class=ev>Click a column header to sort.</p>" +
        svg::table("nodes-table", {"host", "step", "label", "confidence", "samples", "GPU util %"}, nodes,
                   "Nodes: one row per host and step");
    if (!gpus.empty())
        out += svg::table("gpus-table",
                          {"host", "step", "gpu", "name", "util %", "SM %", "tensor %", "DRAM %", "memory %",
                           "power W", "max temp C", "throttled %", "idle %"},
                          gpus, "GPUs: means over each step");
    if (!ports.empty())
        out += svg::table(
            "ports-table",
            {"host", "step", "port", "netdev", "rx GB", "tx GB", "CNP/s", "ECN/s", "pause %", "loss/M"},
            ports, "RDMA ports: totals and rates over each step");
    return out;
}

}  // namespace

std::string json_for_script(const Json& value) {
    return json_text_for_script(
        value.dump(-1, ' ', false, Json::error_handler_t::replace));  // names may not be UTF-8
}

std::string json_text_for_script(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    // '<' only occurs inside strings, where \u003c means the same; so do the bidi controls (U+202A-202E,
    // U+2066-2069), which would otherwise reorder the page's source as a reader sees it.
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '<') {
            out += "\\u003c";
        } else if (i + 3 <= text.size() && is_bidi_control(text.data() + i, 3)) {
            char escaped[8];
            const unsigned code = 0x2000u | ((static_cast<unsigned char>(text[i + 1]) & 0x3fu) << 6) |
                                  (static_cast<unsigned char>(text[i + 2]) & 0x3fu);
            std::snprintf(escaped, sizeof escaped, "\\u%04x", code);
            out += escaped;
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

std::string html_report_body(const JobReport& report, const JobSeries& series) {
    const double seconds = series.end_time - series.start_time;
    std::string out = header(report) + reasons_section(report, seconds) +
                      gpu_charts(report, series, seconds) + fabric_chart(report, series, seconds) +
                      heatmap_section(report, series, seconds) + tables(report);
    if (!report.notes.empty()) {
        out += "<h2>Notes</h2><ul>";
        for (const auto& n : report.notes) out += "<li>" + svg::escape(n) + "</li>";
        out += "</ul>";
    }
    std::vector<std::string> warnings = report.warnings;
    warnings.insert(warnings.end(), series.warnings.begin(), series.warnings.end());
    if (!warnings.empty()) {
        out += "<h2>Warnings</h2><ul>";
        for (const auto& w : warnings) out += "<li>" + svg::escape(w) + "</li>";
        out += "</ul>";
    }
    return out;
}

std::string html_report_page(const JobReport& report, const JobSeries& series) {
    return svg::page("stallscope job " + report.job_id,
                     html_report_body(report, series) + "<script type='application/json' id=report-json>" +
                         json_text_for_script(job_report_json_text(report, -1)) + "</script>");
}

bool write_html_report(const JobReport& report, const std::vector<std::string>& inputs,
                       const std::string& path, std::string& error, const SeriesProgress& progress) {
    const JobSeries series = collect_job_series(report, job_time_axis(report), 0, progress);
    std::string page = html_report_page(report, series);
    std::string from;
    for (const auto& in : inputs) from += (from.empty() ? "" : ", ") + in;
    const auto end = page.rfind("</body>");
    page.insert(end, "<footer class=ev>made by stallscope " + svg::escape(STALLSCOPE_VERSION) + " from " +
                         svg::escape(from) + "</footer>\n");
    return write_file_atomically(path, page, false, error);
}

int run_html(int argc, char** argv, int first) {
    std::set<std::string> with_value = {"sacct"};
    with_value.insert(kOutputFileOptions.begin(), kOutputFileOptions.end());
    const ParsedArgs args = parse_args(argc, argv, first, with_value, {});
    if (args.positional.empty())
        throw UsageError("html needs a stallscope-<jobid> directory or timeline files");
    const auto out = output_file_option(args);
    if (!out) throw UsageError("html needs -o FILE");
    std::vector<std::string> inputs;  // `html 4242 -o x.html`: job ids looked up (job_lookup.h)
    for (const auto& input : args.positional)
        inputs.push_back(resolve_view_input(input, args.value("sacct").value_or("sacct"), "html"));
    // On a terminal, one progress line while the recordings load, another while their timelines are
    // replayed for the charts; each erased when done.
    ProgressBar loading("recordings");
    JobReportOptions options;
    if (loading.active()) options.progress = progress_drawer(loading);
    const JobReport report = build_job_report(inputs, options);
    loading.clear();
    if (report.nodes.empty()) {
        for (const auto& w : report.warnings) std::fprintf(stderr, "stallscope: %s\n", printable(w).c_str());
        std::fprintf(stderr, "stallscope: html: no readable timeline\n");
        return 1;
    }
    std::string error;
    ProgressBar charting("timelines charted");
    const bool written = write_html_report(report, inputs, *out, error,
                                           charting.active() ? progress_drawer(charting) : SeriesProgress{});
    charting.clear();
    if (!written) {
        std::fprintf(stderr, "stallscope: html: %s\n", printable(error).c_str());
        return 1;
    }
    std::fprintf(stderr, "stallscope: wrote %s (%s, %d node(s))\n", printable(*out).c_str(),
                 printable(report.verdict.label).c_str(), report.hosts);
    return 0;
}

}  // namespace stallscope::cli
