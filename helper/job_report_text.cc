// The text rendering of a JobReport (job_report_text.h): what `report` prints and summary.txt holds.
// The default view fits a screen at any job size: identical reasons on many nodes are one line, the
// per-node GPU utilization is a distribution, only the worst nodes get rows, and every straggler and
// every node missing a verdict is named in a compressed host list. --node HOST and --all give detail.
#include "helper/job_report_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "helper/text_output.h"

namespace stallscope::cli {
namespace {

constexpr std::size_t kFullTablesMaxHosts = 4;  // per-GPU and per-port tables by default up to this size
constexpr std::size_t kAllNodeRowsMax = 16;     // every node row by default up to this many recordings
constexpr std::size_t kReasonGroupsShown = 12;
constexpr std::size_t kWarningsShown = 10;
constexpr std::size_t kLineWidth = 100;

std::string format(const char* fmt, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

std::string number_or_dash(const std::optional<double>& v, const char* fmt) {
    return v && std::isfinite(*v) ? format(fmt, *v) : std::string("-");
}

std::string bar(double pct, int width = 20) {
    const int filled = static_cast<int>(std::lround(std::clamp(pct, 0.0, 100.0) / 100.0 * width));
    return std::string(static_cast<std::size_t>(filled), '#') +
           std::string(static_cast<std::size_t>(width - filled), '.');
}

std::string human_bytes(const std::optional<double>& bytes) {
    if (!bytes) return "-";
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double b = *bytes;
    int u = 0;
    while (b >= 1024 && u < 5) b /= 1024, ++u;
    return format("%.1f %s", b, units[u]);
}

// Appends `items` separated by ", " as lines of at most kLineWidth, each starting with `indent`.
void wrap(std::vector<std::string>& lines, const std::string& first, const std::string& text,
          const std::string& indent) {
    std::string line = first;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find(',', start);
        end = end == std::string::npos ? text.size() : end + 1;
        const std::string piece = text.substr(start, end - start);
        if (line.size() + piece.size() > kLineWidth && line.size() > indent.size()) {
            lines.push_back(line);
            line = indent;
        }
        line += piece;
        start = end;
    }
    lines.push_back(line);
}

// A reason's subject without its "host:" prefix (identical across nodes), "" when it was the host.
std::string subject_on_node(const std::string& subject, const JobReport& r) {
    if (r.hosts <= 1) return subject;
    const auto colon = subject.find(':');
    return colon == std::string::npos ? std::string() : subject.substr(colon + 1);
}

std::string host_of(const std::string& subject, const JobReport& r) {
    if (r.hosts <= 1) return r.nodes.empty() ? std::string() : r.nodes.front().host;
    return subject.substr(0, subject.find(':'));
}

struct ReasonGroup {
    const ReasonSummary* first = nullptr;  // root cause order: the group sits where its first member does
    std::string code, subject, label;
    std::vector<std::string> hosts;
};

std::vector<ReasonGroup> group_reasons(const JobReport& r) {
    std::vector<ReasonGroup> groups;
    std::map<std::string, std::size_t> index;
    for (const auto& s : r.verdict.reasons) {
        const std::string subject = subject_on_node(s.reason.subject, r);
        const std::string key = s.reason.code + '\x1f' + subject + '\x1f' + s.reason.label;
        auto [it, inserted] = index.emplace(key, groups.size());
        if (inserted) groups.push_back({&s, s.reason.code, subject, s.reason.label, {}});
        auto& hosts = groups[it->second].hosts;  // a host once, even when the reason fired in two steps
        const std::string host = host_of(s.reason.subject, r);
        if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    }
    return groups;
}

std::string percentile(std::vector<double> sorted, double p) {
    if (sorted.empty()) return "-";
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return format("%.0f", sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1]);
}

void header(std::vector<std::string>& out, const JobReport& r) {
    std::size_t measured = 0;
    int allocated = 0;
    for (const auto& g : r.gpus) measured += g.mean_util_pct ? 1 : 0;
    for (const auto& n : r.nodes) allocated += n.stats.gpus_allocated;
    out.push_back(format("Job %s (%s) user %s: %d node(s), %d step(s), %zu GPU(s) measured",
                         r.job_id.empty() ? "?" : r.job_id.c_str(), r.job_name.c_str(),
                         r.user.empty() ? "?" : r.user.c_str(), r.hosts, r.steps, measured) +
                  (allocated > 0 ? format(" of %d allocated", allocated) : std::string()));
    std::vector<std::string> steps;
    for (const auto& s : r.step_summaries)
        steps.push_back(s.samples ? format("step %s on %d node(s) %s-%s UTC (%.0f s)", s.step_id.c_str(),
                                           s.nodes, format_clock_time(s.start_time).c_str(),
                                           format_clock_time(s.end_time).c_str(), s.duration_seconds())
                                  : format("step %s on %d node(s), no samples", s.step_id.c_str(), s.nodes));
    const std::size_t shown = std::min<std::size_t>(steps.size(), 6);
    for (std::size_t i = 0; i < shown; ++i) out.push_back("  " + steps[i]);
    if (steps.size() > shown)
        out.push_back(format("  ... %zu more step(s) (--json lists all)", steps.size() - shown));
    const StepVerdict& v = r.verdict;
    out.push_back(format("Verdict: %s (confidence %.2f, bottleneck: %s)", v.label.c_str(), v.confidence,
                         v.bottleneck_hint.c_str()) +
                  (r.running_nodes.empty()
                       ? ""
                       : format(" - provisional: still running on %zu node(s), %d samples so far",
                                r.running_nodes.size(), v.samples)));
    for (const auto& u : v.unknown_reasons) out.push_back("  unknown: " + u);
    if (!r.worst_node.empty()) out.push_back("Worst node: " + r.worst_node);
    if (!r.worst_port.empty()) out.push_back("  worst port: " + r.worst_port);
    if (!v.worst_gpu.empty()) out.push_back("  worst GPU: " + v.worst_gpu);
}

void grouped_reasons(std::vector<std::string>& out, const JobReport& r) {
    const auto groups = group_reasons(r);
    if (groups.empty()) return;
    out.push_back("");
    out.push_back("Reasons (root cause first; identical reasons on several nodes grouped):");
    std::size_t n = 0;
    for (const auto& g : groups) {
        if (++n > kReasonGroupsShown) {
            out.push_back(format("  ... %zu more reason group(s) (--all or --json lists every reason)",
                                 groups.size() - kReasonGroupsShown));
            break;
        }
        if (g.hosts.size() == 1 || r.hosts <= 1) {
            const std::string subject = r.hosts > 1 ? g.first->reason.subject : g.subject;
            out.push_back(format("  %zu. ", n) + g.code + (subject.empty() ? "" : " on " + subject) + " [" +
                          g.label + "]");
        } else {
            const std::string what =
                g.code + (g.subject.empty() ? "" : " on " + g.subject) + " [" + g.label + "]";
            std::string hosts = compress_host_list(g.hosts);
            if (hosts.size() > 2 * kLineWidth) {  // two lines of names; --all, --json or --node for the rest
                const std::size_t cut = hosts.rfind(',', 2 * kLineWidth);
                hosts = hosts.substr(0, cut) + ",... (all in --json)";
            }
            wrap(out, format("  %zu. %zu nodes: ", n, g.hosts.size()) + what + ": ", hosts, "       ");
        }
        // The first node's message, naming its host when the rule's message does not.
        const std::string& host = g.hosts.front();
        const std::string& message = g.first->reason.message;
        out.push_back("     " + (r.hosts > 1 && message.rfind(host, 0) != 0 ? host + ": " : "") + message);
    }
}

void named_nodes(std::vector<std::string>& out, const JobReport& r) {
    if (!r.straggler_nodes.empty()) {
        out.push_back("");
        wrap(out,
             format("Straggler nodes (%zu, GPUs < 70 %% of the step's median node): ",
                    r.straggler_nodes.size()),
             compress_host_list(r.straggler_nodes), "  ");
    }
    if (!r.running_nodes.empty()) {
        out.push_back("");
        wrap(out, format("Nodes still recording (%zu, no verdict yet): ", r.running_nodes.size()),
             compress_host_list(r.running_nodes), "  ");
    }
    if (!r.missing_nodes.empty()) {
        out.push_back("");
        wrap(out, format("Nodes without a verdict (%zu, recording_incomplete): ", r.missing_nodes.size()),
             compress_host_list(r.missing_nodes), "  ");
    }
}

void utilization_distribution(std::vector<std::string>& out, const JobReport& r) {
    std::vector<double> utils;
    for (const auto& n : r.nodes)
        if (n.mean_gpu_util_pct) utils.push_back(*n.mean_gpu_util_pct);
    if (utils.size() < 2) return;
    std::sort(utils.begin(), utils.end());
    out.push_back("");
    out.push_back(format(
        "GPU utilization per node (%zu recordings with GPU data): min %s  p10 %s  median %s  p90 %s  max %s",
        utils.size(), percentile(utils, 0).c_str(), percentile(utils, 0.1).c_str(),
        percentile(utils, 0.5).c_str(), percentile(utils, 0.9).c_str(), percentile(utils, 1).c_str()));
    if (utils.size() < 8) return;
    std::size_t buckets[10] = {};
    for (double u : utils) ++buckets[std::clamp(static_cast<int>(u / 10), 0, 9)];
    const std::size_t most = *std::max_element(std::begin(buckets), std::end(buckets));
    for (int b = 9; b >= 0; --b)
        out.push_back(format("  %3d-%3d %%  %-40s %zu", b * 10, b * 10 + 10,
                             std::string(most ? buckets[b] * 40 / most : 0, '#').c_str(), buckets[b]));
}

void notes(std::vector<std::string>& out, const JobReport& r) {
    if (r.notes.empty()) return;
    out.push_back("");
    out.push_back("Notes:");
    for (const auto& n : r.notes) out.push_back("  * " + n);
}

void warnings(std::vector<std::string>& out, const JobReport& r, bool all) {
    if (r.warnings.empty()) return;
    out.push_back("");
    out.push_back("Warnings:");
    const std::size_t shown = all ? r.warnings.size() : std::min(r.warnings.size(), kWarningsShown);
    for (std::size_t i = 0; i < shown; ++i) out.push_back("  " + r.warnings[i]);
    if (shown < r.warnings.size())
        out.push_back(format("  ... %zu more (--all or --json lists all)", r.warnings.size() - shown));
}

void node_rows(std::vector<std::string>& out, const std::vector<const NodeRecording*>& rows,
               const std::string& title) {
    out.push_back("");
    out.push_back(title);
    out.push_back("  host             step   label      conf  samples  GPU util  top reason");
    for (const auto* n : rows)
        out.push_back(format("  %-16s %-6s %-9s %5.2f  %7d  %8s  ", n->host.c_str(), n->step_id.c_str(),
                             n->label.c_str(), n->verdict.confidence, n->verdict.samples,
                             number_or_dash(n->mean_gpu_util_pct, "%.0f %%").c_str()) +
                      (n->incomplete                ? std::string("recording_incomplete")
                       : n->straggler               ? std::string("node_straggler")
                       : n->verdict.reasons.empty() ? std::string("-")
                                                    : n->verdict.reasons.front().reason.code));
}

void gpu_and_port_tables(std::vector<std::string>& out, const JobReport& r, const std::string& only_host) {
    bool gpu_title = false, port_title = false;
    for (const auto& g : r.gpus) {
        if (!only_host.empty() && g.host != only_host) continue;
        if (!gpu_title) {
            out.push_back("");
            out.push_back("GPUs (mean over the step):");
            out.push_back(
                "  host             step   gpu  util                        SM tensor  DRAM  memory   power  "
                " "
                "maxT  throttle");
            gpu_title = true;
        }
        out.push_back(format(
            "  %-16s %-6s %3d  %s %4s %4s %6s %5s  %6s  %6s  %5s  %7s", g.host.c_str(), g.step_id.c_str(),
            g.index, g.mean_util_pct ? bar(*g.mean_util_pct).c_str() : "(no data)           ",
            number_or_dash(g.mean_util_pct, "%.0f%%").c_str(),
            number_or_dash(g.mean_sm_active_pct, "%.0f%%").c_str(),
            number_or_dash(g.mean_tensor_active_pct, "%.0f%%").c_str(),
            number_or_dash(g.mean_dram_bandwidth_pct, "%.0f%%").c_str(),
            number_or_dash(g.mean_memory_pct, "%.1f%%").c_str(),
            number_or_dash(g.mean_power_w, "%.1fW").c_str(),
            number_or_dash(g.max_temperature_c, "%.0fC").c_str(),
            number_or_dash(g.throttle_share ? std::optional<double>(*g.throttle_share * 100) : std::nullopt,
                           "%.1f%%")
                .c_str()));
    }
    for (const auto& p : r.ports) {
        if (!only_host.empty() && p.host != only_host) continue;
        if (!port_title) {
            out.push_back("");
            out.push_back("Fabric ports:");
            out.push_back(
                "  host             step   port        netdev         rx         tx     CNP/s   ECN/s  "
                "pause  loss/M");
            port_title = true;
        }
        auto scaled = [](const std::optional<double>& v, double k) {
            return v ? std::optional<double>(*v * k) : std::nullopt;
        };
        out.push_back(format("  %-16s %-6s %-11s %-10s %10s %10s %8s %7s %6s %7s", p.host.c_str(),
                             p.step_id.c_str(), p.port.c_str(), p.netdev.empty() ? "-" : p.netdev.c_str(),
                             human_bytes(p.rx_bytes).c_str(), human_bytes(p.tx_bytes).c_str(),
                             number_or_dash(p.cnp_per_second, "%.1f").c_str(),
                             number_or_dash(p.ecn_marked_per_second, "%.1f").c_str(),
                             number_or_dash(scaled(p.pause_occupancy, 100), "%.1f%%").c_str(),
                             number_or_dash(p.loss_per_million_packets, "%.2f").c_str()));
    }
}

// Appends a multi-line text (verdict_text's) line by line.
void add_lines(std::vector<std::string>& out, const std::string& text) {
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
}

std::string join_printable(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += printable(l) + "\n";
    return out;
}

std::string node_detail(const JobReport& r, const std::string& host) {
    std::vector<std::string> out;
    std::vector<const NodeRecording*> rows;
    for (const auto& n : r.nodes)
        if (n.host == host) rows.push_back(&n);
    if (rows.empty()) return "";
    header(out, r);
    node_rows(out, rows, "Recordings of " + host + ":");
    for (const auto* n : rows) {
        out.push_back("");
        out.push_back("Step " + n->step_id + " on " + host + " (" +
                      (n->source == "verdict" ? n->verdict_path : n->timeline_path) + "):");
        add_lines(out, verdict_text(n->verdict));
    }
    gpu_and_port_tables(out, r, host);
    return join_printable(out);
}

}  // namespace

std::string job_report_text(const JobReport& r, const ReportView& view) {
    if (!view.node.empty()) return node_detail(r, view.node);
    std::vector<std::string> out;
    // A hang first: at 3 a.m. the rank the job waits for matters more than anything below.
    if (!r.hang_files.empty()) {
        out.push_back(r.hang.line);
        out.push_back("  evidence: " + std::to_string(r.hang_files.size()) + " file(s), first " +
                      r.hang_files.front());
    }
    header(out, r);
    if (view.all) {
        out.push_back("");
        out.push_back("Reasons (every node, root cause first):");
        add_lines(out, verdict_text(r.verdict));
    } else {
        grouped_reasons(out, r);
    }
    named_nodes(out, r);
    utilization_distribution(out, r);
    notes(out, r);
    std::vector<const NodeRecording*> rows;
    for (const auto& n : r.nodes) rows.push_back(&n);
    if (view.all || rows.size() <= kAllNodeRowsMax) {
        node_rows(out, rows, "Nodes:");
    } else {
        // Worst first: label, then no verdict, then lowest GPU utilization.
        std::stable_sort(rows.begin(), rows.end(), [](const NodeRecording* a, const NodeRecording* b) {
            return std::make_tuple(-job_label_rank(a->label), !a->incomplete,
                                   a->mean_gpu_util_pct.value_or(1e9)) <
                   std::make_tuple(-job_label_rank(b->label), !b->incomplete,
                                   b->mean_gpu_util_pct.value_or(1e9));
        });
        rows.resize(std::min(rows.size(), view.top_nodes));
        node_rows(
            out, rows,
            format("Nodes (worst %zu of %zu recordings; --node HOST for one node, --all for every node):",
                   rows.size(), r.nodes.size()));
    }
    if (view.all || static_cast<std::size_t>(r.hosts) <= kFullTablesMaxHosts)
        gpu_and_port_tables(out, r, "");
    else
        out.insert(out.end(), {"", "Per-GPU and per-port tables: --node HOST, --all, or --json."});
    warnings(out, r, view.all);
    return join_printable(out);
}

}  // namespace stallscope::cli
