#include "helper/compare_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "helper/html_report.h"
#include "helper/html_report_svg.h"
#include "libstallscope/util/printable.h"

namespace stallscope::cli {

// Job names, hosts and reason messages come from files the job user writes: every line goes through
// printable() (no terminal escape reaches an admin's terminal).
std::string comparison_text(const Comparison& c) {
    char buf[512];
    std::string out;
    auto emit = [&](const std::string& line) { out += printable(line) + "\n"; };
    auto side_line = [&](const char* tag, const JobSide& s) {
        std::snprintf(
            buf, sizeof buf, "%s: job %s (%s) %s, %d node(s), %d step(s), %zu GPU(s), %.0f s from %s", tag,
            s.report.job_id.empty() ? "?" : s.report.job_id.c_str(), s.report.job_name.c_str(),
            s.report.verdict.label.c_str(), s.report.hosts, s.report.steps, s.report.gpus.size(),
            s.report.verdict.duration_seconds(), format_rfc3339(s.report.verdict.start_time).c_str());
        emit(buf);
    };
    side_line("A", c.a);
    side_line("B", c.b);
    out += "\n";
    emit(c.because);
    if (c.speed.speed == Speed::slower) emit("  measured: " + c.speed.detail);
    if (!c.evidence.empty()) emit("  evidence: " + c.evidence);
    // One format for the header and the rows: the titles sit over their numbers.
    constexpr const char* kRow = "  %-36s %10s %10s %10s  %s";
    out += "\n";
    std::snprintf(buf, sizeof buf, kRow, "metric (mean over the step)", "A", "B", "delta", "");
    emit(buf);
    for (const auto& m : c.metrics) {
        if (!m.a_measured && !m.b_measured) continue;
        auto cell = [](bool measured, double v) {
            return measured ? compare_number_text(v) : std::string("-");
        };
        const bool both = m.a_measured && m.b_measured;
        // The direction only: whether a change is good or bad depends on whether B is slower at all.
        const char* moved = !both || std::fabs(m.relative()) < kNoticeableChange ||
                                    std::fabs(m.delta()) < (m.unit == "%" ? 2.0 : 0.5)
                                ? ""
                            : m.delta() > 0 ? "higher in B"
                                            : "lower in B";
        const std::string delta = both ? (m.delta() > 0 ? "+" : "") + compare_number_text(m.delta()) : "-";
        std::snprintf(buf, sizeof buf, kRow, (m.title + " " + m.unit).c_str(),
                      cell(m.a_measured, m.a).c_str(), cell(m.b_measured, m.b).c_str(), delta.c_str(), moved);
        std::string row = buf;
        while (!row.empty() && row.back() == ' ') row.pop_back();
        emit(row);
    }
    auto list = [&](const char* title, const std::vector<std::string>& codes) {
        std::string line = title;
        for (const auto& code : codes) line += " " + code;
        emit(line + (codes.empty() ? " (none)" : ""));
    };
    out += "\n";
    list("reasons only in A:", c.reasons_only_a);
    list("reasons only in B:", c.reasons_only_b);
    list("reasons in both:  ", c.reasons_both);
    return out;
}

std::string comparison_html(const Comparison& c) {
    std::string body =
        "<header><h1>stallscope compare: A " + svg::escape(c.a.report.job_id) + " vs B " +
        svg::escape(c.b.report.job_id) + "</h1><p id=because><b>" + svg::escape(c.because) + "</b></p>" +
        (c.speed.speed == Speed::slower ? "<p id=measured>measured: " + svg::escape(c.speed.detail) + "</p>"
                                        : "") +
        "<p class=ev>" + svg::escape(c.evidence) + "</p></header>";
    std::vector<std::vector<svg::Cell>> rows;
    for (const auto& m : c.metrics) {
        if (!m.a_measured && !m.b_measured) continue;
        rows.push_back({svg::text(m.title), svg::text(m.unit),
                        m.a_measured ? svg::num(m.a, 2) : svg::text("-"),
                        m.b_measured ? svg::num(m.b, 2) : svg::text("-"),
                        m.a_measured && m.b_measured ? svg::num(m.delta(), 2) : svg::text("-"),
                        svg::text(m.badness() >= kNoticeableChange ? "against B" : "")});
    }
    body += "<h2>Metrics</h2>" + svg::table("compare-table", {"metric", "unit", "A", "B", "B - A", ""}, rows);
    const Json j = comparison_json(c);
    // The x axis runs from the first bucket's centre to the last one's (as on the job page).
    const double seconds =
        c.a.series.bucket_seconds *
        static_cast<double>(std::max<std::size_t>(std::max(c.a.series.buckets, c.b.series.buckets) - 1, 1));
    body += "<h2>Aligned by step start</h2>";
    const std::pair<const char*, const char*> charts[] = {{"gpu_util_pct", "Mean GPU utilization"},
                                                          {"gpu_sm_clock_mhz", "Mean SM clock"},
                                                          {"gpu_power_w", "Mean GPU power"}};
    for (const auto& [key, title] : charts) {
        std::vector<svg::Line> lines;
        for (const char side : {'a', 'b'}) {
            svg::Line l{side == 'a' ? "A " + c.a.report.job_id : "B " + c.b.report.job_id, {}, side == 'b'};
            for (const auto& v : j["aligned"][std::string(key) + "_" + side])
                l.values.push_back(v.is_null() ? NAN : v.get<double>());
            l.values.resize(std::max(c.a.series.buckets, c.b.series.buckets), NAN);
            lines.push_back(std::move(l));
        }
        const std::string unit = std::string(key).substr(std::string(key).rfind('_') + 1);
        body += svg::line_chart(std::string("compare-") + key, std::string(title) + ", A and B",
                                {seconds,
                                 unit == "pct"   ? "%"
                                 : unit == "mhz" ? "MHz"
                                                 : "W",
                                 unit == "pct" ? 100.0 : 0.0},
                                lines);
    }
    auto list = [](const std::vector<std::string>& codes) {
        std::string out;
        for (const auto& code : codes) out += (out.empty() ? "" : ", ") + svg::escape(code);
        return out.empty() ? std::string("none") : out;
    };
    body += "<h2>Reasons</h2><ul><li>only in A: " + list(c.reasons_only_a) +
            "</li><li>only in B: " + list(c.reasons_only_b) + "</li><li>in both: " + list(c.reasons_both) +
            "</li></ul>";
    body += "<h2>A</h2>" + html_report_body(c.a.report, c.a.series);
    body += "<h2>B</h2>" + html_report_body(c.b.report, c.b.series);
    return svg::page("stallscope compare", body + "<script type='application/json' id=compare-json>" +
                                               json_for_script(j) + "</script>");
}

}  // namespace stallscope::cli
