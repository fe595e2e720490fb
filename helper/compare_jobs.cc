#include "helper/compare_jobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "helper/html_report.h"
#include "helper/html_report_svg.h"

namespace stallscope::cli {
namespace {

constexpr std::size_t kBuckets = 240;
constexpr double kNoticeable = 0.10;  // a metric must move by 10 % (relative) to be named as the cause

double mean_of(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
}

MetricDelta metric(const std::string& key, const std::string& title, const std::string& unit,
                   int worse_when) {
    MetricDelta m;
    m.key = key, m.title = title, m.unit = unit, m.worse_when = worse_when;
    return m;
}

// Per-job means of every compared metric, in metric_table()'s order; false: not measured in this job.
std::vector<std::pair<double, bool>> job_values(const JobSide& side) {
    const JobReport& r = side.report;
    std::vector<double> util, power, throttle, idle, sm, cpu, mem, io;
    // Only measured values count: a GPU without a power reading does not pull the mean towards 0.
    for (const auto& g : r.gpus) {
        if (g.mean_util_pct) util.push_back(*g.mean_util_pct);
        if (g.mean_power_w) power.push_back(*g.mean_power_w);
        if (g.throttle_share) throttle.push_back(*g.throttle_share * 100);
        if (g.idle_share) idle.push_back(*g.idle_share * 100);
    }
    for (const auto& n : side.series.nodes) {
        for (const auto& [i, s] : n.gpu_sm_clock_mhz)
            if (std::isfinite(s.mean())) sm.push_back(s.mean());
        if (std::isfinite(n.cpu_pressure_pct.mean())) cpu.push_back(n.cpu_pressure_pct.mean());
        if (std::isfinite(n.memory_pressure_pct.mean())) mem.push_back(n.memory_pressure_pct.mean());
        if (std::isfinite(n.io_pressure_pct.mean())) io.push_back(n.io_pressure_pct.mean());
    }
    double bytes = 0, cnp = 0, pause = 0, loss = 0;
    for (const auto& p : r.ports) {
        bytes += p.rx_bytes.value_or(0) + p.tx_bytes.value_or(0);
        cnp += p.cnp_per_second.value_or(0);
        if (p.pause_occupancy) pause = std::max(pause, *p.pause_occupancy * 100);
        if (p.loss_per_million_packets) loss = std::max(loss, *p.loss_per_million_packets);
    }
    const double seconds = std::max(1.0, r.verdict.duration_seconds());
    const double nodes = static_cast<double>(std::max(r.hosts, 1));
    const bool ports = !r.ports.empty();
    return {{mean_of(util), !util.empty()},
            {mean_of(sm), !sm.empty()},
            {mean_of(power), !power.empty()},
            {mean_of(throttle), !throttle.empty()},
            {mean_of(idle), !idle.empty()},
            {bytes * 8 / 1e9 / seconds / nodes, ports},
            {cnp, ports},
            {pause, ports},
            {loss, ports},
            {mean_of(cpu), !cpu.empty()},
            {mean_of(mem), !mem.empty()},
            {mean_of(io), !io.empty()}};
}

std::vector<MetricDelta> metric_table() {
    return {metric("gpu_util_pct", "GPU utilization", "%", -1),
            metric("gpu_sm_clock_mhz", "GPU SM clock", "MHz", -1),
            metric("gpu_power_w", "GPU power", "W", -1),
            metric("gpu_throttled_pct", "GPU samples throttled", "%", +1),
            metric("gpu_idle_pct", "GPU samples idle", "%", +1),
            metric("fabric_gbps_per_node", "RDMA traffic per node", "Gbit/s", 0),
            metric("cnp_per_second", "congestion notifications (CNP)", "/s", +1),
            metric("pause_pct", "PFC pause occupancy (worst port)", "%", +1),
            metric("loss_per_million", "RDMA packets lost (worst port)", "per M", +1),
            metric("cpu_pressure_pct", "CPU pressure (PSI some)", "%", +1),
            metric("memory_pressure_pct", "memory pressure (PSI some)", "%", +1),
            metric("io_pressure_pct", "I/O pressure (PSI some)", "%", +1)};
}

// The merged verdict's reason codes, info left out. Not watch_view.h's reason_codes (every node's): a
// unity build can put both files in one translation unit.
std::set<std::string> verdict_reason_codes(const JobReport& r) {
    std::set<std::string> out;
    for (const auto& s : r.verdict.reasons)
        if (s.reason.severity != "info") out.insert(s.reason.code);
    return out;
}

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 || v == std::floor(v) ? "%.0f" : "%.1f", v);
    return buf;
}

std::string metric_sentence(const MetricDelta& m) {
    return m.title + " " + (m.delta() < 0 ? "fell" : "rose") + " from " + fmt(m.a) + " " + m.unit +
           " in A to " + fmt(m.b) + " " + m.unit + " in B";
}

// A gap in what was measured says what is not known, never why a job is slow.
bool is_data_quality(const Reason& r) {
    return r.category == "telemetry" || r.category == "profiler";
}

const MetricDelta* most_against_b(const std::vector<MetricDelta>& metrics) {
    const MetricDelta* worst = nullptr;
    for (const auto& m : metrics)
        if (m.badness() >= kNoticeable && (!worst || m.badness() > worst->badness())) worst = &m;
    return worst;
}

// What differs, for a B that is not (or not known to be) slower: facts, not causes; the reasons about
// B's performance only (a gap in its data is in the reasons list, not offered as a difference).
std::string differences(const Comparison& c) {
    std::string out;
    for (const auto& code : c.reasons_only_b) {
        const auto& reasons = c.b.report.verdict.reasons;
        const auto it = std::find_if(reasons.begin(), reasons.end(),
                                     [&](const ReasonSummary& r) { return r.reason.code == code; });
        if (it != reasons.end() && is_data_quality(it->reason)) continue;
        out += (out.empty() ? "reasons only in B: " : " ") + code;
    }
    std::size_t named = 0;
    for (const auto& m : c.metrics)
        if (m.a_measured && m.b_measured && std::fabs(m.relative()) >= kNoticeable &&
            std::fabs(m.delta()) >= (m.unit == "%" ? 2.0 : 0.5) && named++ < 3)
            out += (out.empty() ? "" : "; ") + metric_sentence(m);
    return out;
}

void explain(Comparison& c) {
    c.speed = measure_speed(c.a.report, c.b.report, c.a.busbw, c.b.busbw);
    const MetricDelta* worst = most_against_b(c.metrics);
    switch (c.speed.speed) {
        case Speed::slower:
            break;
        case Speed::faster:
            c.because = "B is not slower than A: it is faster (" + c.speed.detail + ")";
            c.evidence = differences(c);
            return;
        case Speed::same:
            c.because = "B is as fast as A (" + c.speed.detail + ")";
            c.evidence = differences(c);
            return;
        case Speed::unknown:
            c.because = "Cannot tell whether B is slower than A: " + c.speed.detail;
            c.evidence = differences(c);
            if (!c.evidence.empty()) c.evidence = "differences (not a measure of speed): " + c.evidence;
            return;
    }
    // B is slower: 1. a reason that pushes B's label and is absent from A, the most direct evidence.
    for (const auto& s : c.b.report.verdict.reasons) {
        if (s.reason.severity == "info" || is_data_quality(s.reason) ||
            std::find(c.reasons_only_b.begin(), c.reasons_only_b.end(), s.reason.code) ==
                c.reasons_only_b.end())
            continue;
        c.because = "B is slower than A because " + s.reason.code + " fired in B (not in A)" +
                    (s.reason.subject.empty() ? "" : " on " + s.reason.subject) + ": " + s.reason.message;
        c.evidence = "reason " + s.reason.code + " in " + fmt(s.share * 100) + " % of B's step";
        if (worst) c.evidence += "; " + metric_sentence(*worst);
        return;
    }
    // 2. Otherwise the metric that moved most against B.
    if (worst) {
        c.because = "B is slower than A because " + metric_sentence(*worst) + " (no reason fired only in B)";
        c.evidence = worst->key + ": " + fmt(worst->a) + " -> " + fmt(worst->b) + " " + worst->unit;
        return;
    }
    c.because =
        "B is slower than A, and nothing recorded explains it: no reason fired only in B and no metric moved "
        "by 10 % or more against B";
    c.evidence = "";
}

using GpuSeries = std::map<int, BucketedSeries> NodeSeries::*;
constexpr std::pair<const char*, GpuSeries> kAlignedSeries[] = {
    {"gpu_util_pct", &NodeSeries::gpu_util_pct},
    {"gpu_sm_clock_mhz", &NodeSeries::gpu_sm_clock_mhz},
    {"gpu_power_w", &NodeSeries::gpu_power_w}};

// Per bucket: the mean over every GPU of every node; null where none had a sample.
Json aligned_values(const JobSeries& s, GpuSeries member) {
    Json v = Json::array();
    for (std::size_t k = 0; k < s.buckets; ++k) {
        double sum = 0;
        int n = 0;
        for (const auto& node : s.nodes)
            for (const auto& [index, gpu] : node.*member)
                if (std::isfinite(gpu.at(k))) sum += gpu.at(k), ++n;
        v.push_back(n ? Json(std::round(sum / n * 10) / 10) : Json(nullptr));
    }
    return v;
}

}  // namespace

double MetricDelta::relative() const {
    if (a == 0) return b == 0 ? 0 : (b > 0 ? 1 : -1);
    return (b - a) / std::fabs(a);
}

double MetricDelta::badness() const {
    if (!a_measured || !b_measured) return 0;
    // Tiny absolute changes of near-zero rates (0.01 -> 0.02 CNP/s) are noise, not a cause.
    if (std::fabs(b - a) < (unit == "%" ? 2.0 : 0.5)) return 0;
    return std::max(0.0, worse_when * relative());
}

Comparison compare_jobs(JobSide a, JobSide b) {
    Comparison c;
    // Aligned by their start: equal bucket lengths (the longer of the two jobs' own), each job as many
    // buckets as its span needs.
    SeriesAxis axis_a = job_time_axis(a.report, kBuckets), axis_b = job_time_axis(b.report, kBuckets);
    const double bucket_seconds = std::max(axis_a.bucket_seconds, axis_b.bucket_seconds);
    for (auto [axis, report] : {std::pair{&axis_a, &a.report}, std::pair{&axis_b, &b.report}}) {
        axis->bucket_seconds = bucket_seconds;
        axis->buckets = static_cast<std::size_t>(
            std::clamp(std::round(report->verdict.duration_seconds() / bucket_seconds) + 1, 1.0,
                       static_cast<double>(kBuckets)));
    }
    a.series = collect_job_series(a.report, axis_a);
    b.series = collect_job_series(b.report, axis_b);
    for (auto* side : {&a, &b})
        for (const auto& n : side->series.nodes)
            for (const auto& [key, bw] : n.nccl_busbw_gbs)
                side->busbw[key].first += bw.first, side->busbw[key].second += bw.second;
    c.a = std::move(a), c.b = std::move(b);
    c.metrics = metric_table();
    const auto va = job_values(c.a), vb = job_values(c.b);
    for (std::size_t i = 0; i < c.metrics.size(); ++i) {
        c.metrics[i].a = va[i].first, c.metrics[i].a_measured = va[i].second;
        c.metrics[i].b = vb[i].first, c.metrics[i].b_measured = vb[i].second;
    }
    const auto ra = verdict_reason_codes(c.a.report), rb = verdict_reason_codes(c.b.report);
    for (const auto& code : ra) (rb.count(code) ? c.reasons_both : c.reasons_only_a).push_back(code);
    for (const auto& code : rb)
        if (!ra.count(code)) c.reasons_only_b.push_back(code);
    explain(c);
    return c;
}

Json comparison_json(const Comparison& c) {
    auto side = [](const JobSide& s) {
        return Json{{"input", s.input},
                    {"job_id", s.report.job_id},
                    {"job_name", s.report.job_name},
                    {"label", s.report.verdict.label},
                    {"nodes", s.report.hosts},
                    {"steps", s.report.steps},
                    {"gpus", s.report.gpus.size()},
                    {"duration_seconds", s.report.verdict.duration_seconds()},
                    {"start", format_rfc3339(s.report.verdict.start_time)}};
    };
    Json o{{"schema", "stallscope.compare/1"}, {"a", side(c.a)}, {"b", side(c.b)}};
    o["metrics"] = Json::array();
    auto rounded = [](double v) { return std::round(v * 100) / 100; };
    for (const auto& m : c.metrics)
        o["metrics"].push_back(
            Json{{"key", m.key},
                 {"unit", m.unit},
                 {"a", m.a_measured ? Json(rounded(m.a)) : Json(nullptr)},
                 {"b", m.b_measured ? Json(rounded(m.b)) : Json(nullptr)},
                 {"delta", m.a_measured && m.b_measured ? Json(rounded(m.delta())) : Json(nullptr)},
                 {"worse_in_b", m.badness() >= kNoticeable}});
    const SpeedMeasure& sp = c.speed;
    o["speed"] =
        Json{{"b_against_a", speed_name(sp.speed)},
             {"basis", sp.basis.empty() ? Json(nullptr) : Json(sp.basis)},
             {"a", sp.basis.empty() ? Json(nullptr) : Json(rounded(sp.a))},
             {"b", sp.basis.empty() ? Json(nullptr) : Json(rounded(sp.b))},
             {"unit", sp.unit},
             {"relative", sp.basis.empty() ? Json(nullptr) : Json(std::round(sp.relative * 1000) / 1000)},
             {"detail", sp.detail}};
    o["reasons_only_in_a"] = c.reasons_only_a;
    o["reasons_only_in_b"] = c.reasons_only_b;
    o["reasons_in_both"] = c.reasons_both;
    o["because"] = c.because;
    o["evidence"] = c.evidence;
    // Job means of both over the same relative time axis (buckets without a sample are null).
    Json aligned{{"bucket_seconds", c.a.series.bucket_seconds}};
    for (const auto& [name, series] : kAlignedSeries) {
        aligned[std::string(name) + "_a"] = aligned_values(c.a.series, series);
        aligned[std::string(name) + "_b"] = aligned_values(c.b.series, series);
    }
    o["aligned"] = std::move(aligned);
    return o;
}

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
        auto cell = [](bool measured, double v) { return measured ? fmt(v) : std::string("-"); };
        const bool both = m.a_measured && m.b_measured;
        // The direction only: whether a change is good or bad depends on whether B is slower at all.
        const char* moved = !both || std::fabs(m.relative()) < kNoticeable ||
                                    std::fabs(m.delta()) < (m.unit == "%" ? 2.0 : 0.5)
                                ? ""
                            : m.delta() > 0 ? "higher in B"
                                            : "lower in B";
        const std::string delta = both ? (m.delta() > 0 ? "+" : "") + fmt(m.delta()) : "-";
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
                        svg::text(m.badness() >= kNoticeable ? "against B" : "")});
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
