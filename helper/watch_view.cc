#include "helper/watch_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "libstallscope/model/json_fields.h"

namespace stallscope::cli {
namespace {

int severity(const std::string& label) {
    if (label == kLabelFailRisk) return 3;
    if (label == kLabelSlow) return 2;
    if (label == kLabelUnknown) return 1;
    return 0;
}

std::string fmt(const char* f, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, f, args...);
    return buf;
}

std::string age(double seconds) {
    if (seconds < 0) seconds = 0;
    if (seconds < 120) return fmt("%.0fs", seconds);
    if (seconds < 7200) return fmt("%.0fm", seconds / 60);
    return fmt("%.0fh", seconds / 3600);
}

// A reason across the nodes that show it.
struct WatchedReason {
    std::string code, label, message;
    std::vector<std::string> hosts;
    double first_seen = 0, last_seen = 0;
    bool now = false;  // fired in some node's latest sample
};

std::vector<WatchedReason> reasons_across_nodes(const JobReport& report) {
    std::map<std::string, WatchedReason> by_code;
    for (const auto& node : report.nodes) {
        for (const auto& r : node.verdict.reasons) {
            WatchedReason& g = by_code[r.reason.code];
            if (g.code.empty()) {
                g.code = r.reason.code;
                g.label = r.reason.label;
                g.message = r.reason.message;
                g.first_seen = r.reason.first_seen;
            }
            if (std::find(g.hosts.begin(), g.hosts.end(), node.host) == g.hosts.end())
                g.hosts.push_back(node.host);
            g.first_seen = std::min(g.first_seen, r.reason.first_seen);
            g.last_seen = std::max(g.last_seen, r.last_seen);
            if (r.last_seen >= node.verdict.end_time) g.now = true;
        }
    }
    std::vector<WatchedReason> out;
    for (auto& [code, g] : by_code) out.push_back(std::move(g));
    // As they appeared (the earliest anomaly is most often the root cause), the worst label first on ties.
    std::sort(out.begin(), out.end(), [](const WatchedReason& a, const WatchedReason& b) {
        if (a.first_seen != b.first_seen) return a.first_seen < b.first_seen;
        return severity(a.label) > severity(b.label);
    });
    return out;
}

std::vector<const NodeRecording*> worst_nodes(const JobReport& report) {
    std::vector<const NodeRecording*> nodes;
    for (const auto& n : report.nodes) nodes.push_back(&n);
    std::stable_sort(nodes.begin(), nodes.end(), [](const NodeRecording* a, const NodeRecording* b) {
        const int sa = severity(a->label), sb = severity(b->label);
        if (sa != sb) return sa > sb;
        if (a->verdict.confidence != b->verdict.confidence)
            return a->verdict.confidence > b->verdict.confidence;
        return a->mean_gpu_util_pct.value_or(101) < b->mean_gpu_util_pct.value_or(101);
    });
    return nodes;
}

double last_sample_time(const JobReport& report) {
    double t = 0;
    for (const auto& n : report.nodes) t = std::max(t, n.verdict.end_time);
    return t;
}

std::string clip(std::string line, int columns) {
    if (columns > 0 && line.size() > static_cast<std::size_t>(columns))
        line.resize(static_cast<std::size_t>(columns));
    return line + "\n";
}

}  // namespace

std::set<std::string> reason_codes(const JobReport& report) {
    std::set<std::string> codes;
    for (const auto& n : report.nodes)
        for (const auto& r : n.verdict.reasons) codes.insert(r.reason.code);
    return codes;
}

std::string watch_text(const WatchFrame& f, const WatchSize& size) {
    const JobReport& r = *f.report;
    std::vector<std::string> lines;
    std::map<std::string, int> labels;
    for (const auto& n : r.nodes) ++labels[n.label.empty() ? kLabelUnknown : n.label];
    lines.push_back(fmt("stallscope watch %s  %s UTC  (read in %.1f s)", printable(f.dir).c_str(),
                        format_clock_time(f.now).c_str(), f.build_seconds));
    const double last = last_sample_time(r);
    lines.push_back(
        fmt("job %s  %d nodes  %d steps  FAIL_RISK %d  SLOW %d  FAST %d  UNKNOWN %d  last sample %s",
            r.job_id.empty() ? "-" : printable(r.job_id).c_str(), r.hosts, r.steps, labels[kLabelFailRisk],
            labels[kLabelSlow], labels[kLabelFast], labels[kLabelUnknown],
            last > 0 ? (age(f.now - last) + " ago").c_str() : "none yet"));
    if (f.hang && !f.hang->files.empty()) {
        lines.push_back("!! " + printable(f.hang->finding.line));
        lines.push_back(
            fmt("   evidence: %zu file(s) in %s", f.hang->files.size(), printable(f.dir).c_str()));
    }
    const auto groups = reasons_across_nodes(r);
    const auto nodes = worst_nodes(r);
    // Rows left for the two lists: reasons get at most half, the worst nodes the rest.
    const int fixed = static_cast<int>(lines.size()) + 3;  // two section titles + the table header
    const int room = std::max(4, size.rows - fixed - 1);
    const int reason_rows = std::min(static_cast<int>(groups.size()), std::max(1, room / 2));
    lines.push_back(groups.empty() ? "reasons: none so far"
                                   : "reasons (as they appeared; * firing now, + new):");
    for (int i = 0; i < reason_rows; ++i) {
        const WatchedReason& g = groups[static_cast<std::size_t>(i)];
        const bool fresh = f.new_reasons.count(g.code) > 0;
        lines.push_back(fmt(" %c%c %-9s %-28s %4zu node(s) since %s  %s", g.now ? '*' : ' ',
                            fresh ? '+' : ' ', g.label.c_str(), g.code.c_str(), g.hosts.size(),
                            format_clock_time(g.first_seen).c_str(),
                            printable(compress_host_list(g.hosts)).c_str()));
    }
    if (static_cast<int>(groups.size()) > reason_rows)
        lines.push_back(fmt("    ... %zu more reasons (stallscope report %s)",
                            groups.size() - static_cast<std::size_t>(reason_rows), printable(f.dir).c_str()));
    const int node_rows = std::max(1, size.rows - static_cast<int>(lines.size()) - 3);
    lines.push_back("worst nodes:");
    lines.push_back(fmt("  %-20s %-5s %-9s %5s %5s %5s  %s", "NODE", "STEP", "LABEL", "CONF", "GPU%", "AGE",
                        "TOP REASON"));
    int shown = 0;
    for (const NodeRecording* n : nodes) {
        if (shown == node_rows) break;
        // A straggler's label is raised by the job merge, not by a reason of its own.
        const std::string top = !n->verdict.reasons.empty() ? n->verdict.reasons.front().reason.code
                                : n->straggler              ? "straggler (GPUs below the job's median node)"
                                                            : "-";
        lines.push_back(fmt("  %-20s %-5s %-9s %5.2f %5s %5s  %s", printable(n->host).c_str(),
                            printable(n->step_id).c_str(), n->label.c_str(), n->verdict.confidence,
                            n->mean_gpu_util_pct ? fmt("%.0f", *n->mean_gpu_util_pct).c_str() : "-",
                            n->verdict.end_time > 0 ? age(f.now - n->verdict.end_time).c_str() : "-",
                            top.c_str()));
        ++shown;
    }
    if (nodes.size() > static_cast<std::size_t>(shown))
        lines.push_back(fmt("  ... %zu more nodes", nodes.size() - static_cast<std::size_t>(shown)));
    std::string out;
    for (const auto& l : lines) out += clip(l, size.columns);
    return out;
}

Json watch_json(const WatchFrame& f) {
    using json_fields::put;
    const JobReport& r = *f.report;
    Json labels = Json::object();
    for (const char* l : {kLabelFailRisk, kLabelSlow, kLabelFast, kLabelUnknown}) labels[l] = 0;
    std::map<std::string, int> counts;
    for (const auto& n : r.nodes) ++counts[n.label.empty() ? kLabelUnknown : n.label];
    for (const auto& [label, count] : counts) labels[label] = count;
    Json reasons = Json::array();
    for (const auto& g : reasons_across_nodes(r)) {
        Json j = json_fields::object_of(8);
        put(j, "code", g.code);
        put(j, "label", g.label);
        put(j, "nodes", g.hosts.size());
        put(j, "hosts", compress_host_list(g.hosts));
        put(j, "first_seen", format_rfc3339(g.first_seen));
        put(j, "last_seen", format_rfc3339(g.last_seen));
        put(j, "firing_now", g.now);
        put(j, "new", f.new_reasons.count(g.code) > 0);
        reasons.push_back(std::move(j));
    }
    Json nodes = Json::array();
    for (const NodeRecording* n : worst_nodes(r)) {
        if (nodes.size() >= f.top_nodes) break;
        Json j = json_fields::object_of(7);
        put(j, "host", n->host);
        put(j, "step", n->step_id);
        put(j, "label", n->label);
        put(j, "confidence", n->verdict.confidence);
        put(j, "gpu_util_pct", json_fields::or_null(n->mean_gpu_util_pct));
        put(j, "last_sample",
            n->verdict.end_time > 0 ? Json(format_rfc3339(n->verdict.end_time)) : Json(nullptr));
        put(j, "top_reason",
            n->verdict.reasons.empty() ? Json(nullptr) : Json(n->verdict.reasons.front().reason.code));
        nodes.push_back(std::move(j));
    }
    Json j = json_fields::object_of(10);
    put(j, "schema", "stallscope.watch/1");
    put(j, "time", format_rfc3339(f.now));
    put(j, "dir", f.dir);
    put(j, "job_id", r.job_id);
    put(j, "nodes", r.hosts);
    put(j, "labels", std::move(labels));
    const double last = last_sample_time(r);
    put(j, "last_sample", last > 0 ? Json(format_rfc3339(last)) : Json(nullptr));
    put(j, "hang", f.hang && !f.hang->files.empty() ? to_json(f.hang->finding) : Json(nullptr));
    put(j, "reasons", std::move(reasons));
    put(j, "worst_nodes", std::move(nodes));
    return j;
}

}  // namespace stallscope::cli
