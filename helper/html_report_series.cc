#include "helper/html_report_series.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>

#include "helper/parallel_each.h"
#include "libstallscope/model/rates.h"

namespace stallscope::cli {

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

JobSeries collect_job_series(const JobReport& report, std::size_t buckets, unsigned threads,
                             const SeriesProgress& progress) {
    JobSeries job;
    // No more buckets than samples: a 10 s recording of 5 minutes has 30 points, not 240 with gaps.
    int most_samples = 1;
    for (const auto& n : report.nodes) most_samples = std::max(most_samples, n.verdict.samples);
    job.buckets = std::clamp<std::size_t>(buckets, 1, static_cast<std::size_t>(most_samples));
    job.start_time = report.verdict.start_time;
    job.end_time = std::max(report.verdict.end_time, job.start_time + 1);
    job.bucket_seconds = (job.end_time - job.start_time) / static_cast<double>(job.buckets);
    // Every node's timeline replayed on its own thread (a big job's page waited for them one by one), each
    // into its own slot: the page is the same with 1 thread or 64.
    job.nodes.resize(report.nodes.size());
    std::vector<std::string> errors(report.nodes.size());
    std::atomic<std::uint64_t> bytes_read{0};
    auto collect = [&](std::size_t i) {
        const NodeRecording& node = report.nodes[i];
        NodeSeries& series = job.nodes[i];
        series.host = node.host;
        // The profiler's own rates since the previous sample: nothing copied or computed twice.
        auto observe = [&](const Snapshot& s, const Rates* rates) {
            const double offset = (s.time - job.start_time) / job.bucket_seconds;
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
    return job;
}

}  // namespace stallscope::cli
