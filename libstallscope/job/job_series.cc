#include "libstallscope/job/job_series.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <optional>

#include "libstallscope/job/parallel_each.h"
#include "libstallscope/job/replay_timeline.h"
#include "libstallscope/model/rates.h"

namespace stallscope {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double delta_of(const DeltaTable& table, std::string_view entity, const char* counter) {
    const auto row = table.find(entity);
    if (row == table.end()) return 0;
    const auto it = row->second.find(counter);
    return it == row->second.end() ? 0 : static_cast<double>(it->second.delta);
}
}  // namespace

void BucketedSeries::add(std::size_t bucket, double v) {
    if (!std::isfinite(v)) return;
    if (sum.size() <= bucket) sum.resize(bucket + 1, 0), count.resize(bucket + 1, 0);
    sum[bucket] += v;
    ++count[bucket];
}

double BucketedSeries::at(std::size_t bucket) const {
    return bucket < count.size() && count[bucket] ? sum[bucket] / count[bucket] : kNaN;
}

double BucketedSeries::mean() const {
    double s = 0;
    long n = 0;
    for (std::size_t i = 0; i < sum.size(); ++i) s += sum[i], n += count[i];
    return n ? s / static_cast<double>(n) : kNaN;
}

double BucketedSeries::max() const {
    double m = kNaN;
    for (std::size_t i = 0; i < count.size(); ++i)
        if (count[i] && !(at(i) <= m)) m = at(i);
    return m;
}

double sampling_interval(const JobReport& report) {
    // As the samples are spaced (the header's interval is what was asked; drift and a slow collector
    // stretch it).
    double interval = 0;
    for (const auto& n : report.nodes)
        if (n.verdict.samples > 1)
            interval = std::max(interval, n.verdict.duration_seconds() / (n.verdict.samples - 1));
    return interval;
}

SeriesAxis job_time_axis(const JobReport& report, std::size_t max_buckets) {
    SeriesAxis axis;
    axis.start_time = report.verdict.start_time;
    const double span = std::max(report.verdict.end_time - report.verdict.start_time, 0.0);
    const double interval = sampling_interval(report);
    // One bucket per interval, centred on the samples: bucket k holds what was sampled about k intervals
    // after the start (rounding, so timer jitter does not push two samples into one bucket).
    const double wanted = interval > 0 ? std::round(span / interval) + 1 : 1;
    axis.buckets = static_cast<std::size_t>(
        std::clamp(wanted, 1.0, static_cast<double>(std::max<std::size_t>(max_buckets, 1))));
    axis.bucket_seconds = axis.buckets > 1 ? std::max(interval, span / static_cast<double>(axis.buckets - 1))
                                           : std::max(span, 1.0);
    return axis;
}

void BucketedSeries::merge(const BucketedSeries& other) {
    if (sum.size() < other.sum.size()) sum.resize(other.sum.size(), 0), count.resize(other.sum.size(), 0);
    for (std::size_t i = 0; i < other.sum.size(); ++i) sum[i] += other.sum[i], count[i] += other.count[i];
}

JobSeries collect_job_series(const JobReport& report, const SeriesAxis& axis, unsigned threads,
                             const SeriesProgress& progress) {
    JobSeries job;
    job.buckets = std::max<std::size_t>(axis.buckets, 1);
    job.start_time = axis.start_time;
    job.bucket_seconds = axis.bucket_seconds > 0 ? axis.bucket_seconds : 1;
    // The x axis runs from the first bucket's centre to the last one's.
    job.end_time =
        job.start_time + job.bucket_seconds * static_cast<double>(std::max<std::size_t>(job.buckets - 1, 1));
    for (const auto& s : report.step_summaries)
        if (s.samples > 0) job.steps.push_back({s.step_id, s.start_time, s.end_time});
    std::vector<NodeSeries> recordings(report.nodes.size());
    // Every node's timeline replayed on its own thread (a big job's page waited for them one by one), each
    // into its own slot: the page is the same with 1 thread or 64.
    std::vector<std::string> errors(report.nodes.size());
    std::atomic<std::uint64_t> bytes_read{0};
    auto collect = [&](std::size_t i) {
        const NodeRecording& node = report.nodes[i];
        NodeSeries& series = recordings[i];
        series.host = node.host;
        // The profiler's own rates since the previous sample: nothing copied or computed twice.
        auto observe = [&](const Snapshot& s, const Rates* rates) {
            const double offset = std::round((s.time - job.start_time) / job.bucket_seconds);
            if (!std::isfinite(offset)) return;  // a sample without a usable time has no place on the axis
            const auto b =
                static_cast<std::size_t>(std::clamp(offset, 0.0, static_cast<double>(job.buckets - 1)));
            double util_sum = 0;
            int util_n = 0;
            for (const auto& g : s.gpus) {
                if (g.utilization_pct)
                    series.gpu_util_pct[g.index].add(b, *g.utilization_pct), util_sum += *g.utilization_pct,
                        ++util_n;
                if (g.power_w) series.gpu_power_w[g.index].add(b, *g.power_w);
                if (g.sm_clock_mhz)
                    series.gpu_sm_clock_mhz[g.index].add(b, static_cast<double>(*g.sm_clock_mhz));
            }
            if (util_n) series.mean_gpu_util_pct.add(b, util_sum / util_n);
            const Psi& psi = s.host_stats.psi;
            if (psi.cpu_some_avg10) series.cpu_pressure_pct.add(b, *psi.cpu_some_avg10);
            if (psi.memory_some_avg10) series.memory_pressure_pct.add(b, *psi.memory_some_avg10);
            if (psi.io_some_avg10) series.io_pressure_pct.add(b, *psi.io_some_avg10);
            for (const auto& c : s.nccl.inspector.collectives)
                if (c.records > 0 && std::isfinite(c.median_busbw_gbs)) {
                    auto& [sum, n] =
                        series.nccl_busbw_gbs[c.coll + " " + std::to_string(c.msg_size_bytes) + " B"];
                    sum += c.median_busbw_gbs, ++n;
                }
            if (rates && rates->interval_seconds > 0) {
                const Rates& r = *rates;
                for (const auto& p : s.rdma) {
                    const double bytes = 4 * (delta_of(r.rdma_counters, p.key(), "port_rcv_data") +
                                              delta_of(r.rdma_counters, p.key(), "port_xmit_data"));
                    series.port_gbps[p.key()].add(b, bytes * 8 / 1e9 / r.interval_seconds);
                }
            }
        };
        try {
            ReplayResult ignored;
            if (!replay_timeline(node.timeline_path, std::nullopt, false, ignored, errors[i], observe,
                                 &bytes_read))
                return;
            errors[i].clear();
        } catch (const std::exception& e) {  // out of memory: this node's charts only
            errors[i] = node.timeline_path + ": " + e.what();
        }
    };
    std::function<void(std::size_t)> on_progress;
    if (progress)
        on_progress = [&](std::size_t done) { progress(done, report.nodes.size(), bytes_read.load()); };
    parallel_each(report.nodes.size(), threads, collect, on_progress);
    for (auto& e : errors)
        if (!e.empty()) job.warnings.push_back(std::move(e));
    // The steps of one host into one series: segments of one line on the job's axis, not one line per
    // step with the same name.
    std::map<std::string, std::size_t> slot_of_host;
    for (auto& r : recordings) {
        const auto [slot, added] = slot_of_host.try_emplace(r.host, job.nodes.size());
        if (added) {
            job.nodes.push_back(std::move(r));
            continue;
        }
        NodeSeries& into = job.nodes[slot->second];
        for (const auto& [index, s] : r.gpu_util_pct) into.gpu_util_pct[index].merge(s);
        for (const auto& [index, s] : r.gpu_power_w) into.gpu_power_w[index].merge(s);
        for (const auto& [index, s] : r.gpu_sm_clock_mhz) into.gpu_sm_clock_mhz[index].merge(s);
        for (const auto& [port, s] : r.port_gbps) into.port_gbps[port].merge(s);
        into.mean_gpu_util_pct.merge(r.mean_gpu_util_pct);
        into.cpu_pressure_pct.merge(r.cpu_pressure_pct);
        into.memory_pressure_pct.merge(r.memory_pressure_pct);
        into.io_pressure_pct.merge(r.io_pressure_pct);
        for (const auto& [key, bw] : r.nccl_busbw_gbs)
            into.nccl_busbw_gbs[key].first += bw.first, into.nccl_busbw_gbs[key].second += bw.second;
    }
    return job;
}

}  // namespace stallscope
