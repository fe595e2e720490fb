#include "libstallscope/job/compare_jobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace stallscope {
namespace {

constexpr std::size_t kBuckets = 240;

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

// The merged verdict's reason codes, info left out (not watch_view.h's reason_codes: those are every
// node's).
std::set<std::string> verdict_reason_codes(const JobReport& r) {
    std::set<std::string> out;
    for (const auto& s : r.verdict.reasons)
        if (s.reason.severity != "info") out.insert(s.reason.code);
    return out;
}

std::string metric_sentence(const MetricDelta& m) {
    return m.title + " " + (m.delta() < 0 ? "fell" : "rose") + " from " + compare_number_text(m.a) + " " +
           m.unit + " in A to " + compare_number_text(m.b) + " " + m.unit + " in B";
}

// A gap in what was measured says what is not known, never why a job is slow.
bool is_data_quality(const Reason& r) {
    return r.category == "telemetry" || r.category == "profiler";
}

const MetricDelta* most_against_b(const std::vector<MetricDelta>& metrics) {
    const MetricDelta* worst = nullptr;
    for (const auto& m : metrics)
        if (m.badness() >= kNoticeableChange && (!worst || m.badness() > worst->badness())) worst = &m;
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
        if (m.a_measured && m.b_measured && std::fabs(m.relative()) >= kNoticeableChange &&
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
        c.evidence =
            "reason " + s.reason.code + " in " + compare_number_text(s.share * 100) + " % of B's step";
        if (worst) c.evidence += "; " + metric_sentence(*worst);
        return;
    }
    // 2. Otherwise the metric that moved most against B.
    if (worst) {
        c.because = "B is slower than A because " + metric_sentence(*worst) + " (no reason fired only in B)";
        c.evidence = worst->key + ": " + compare_number_text(worst->a) + " -> " +
                     compare_number_text(worst->b) + " " + worst->unit;
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

std::string compare_number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 || v == std::floor(v) ? "%.0f" : "%.1f", v);
    return buf;
}

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
                 {"worse_in_b", m.badness() >= kNoticeableChange}});
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

}  // namespace stallscope
