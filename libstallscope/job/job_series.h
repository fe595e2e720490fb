// Time series of a job for the HTML view and `compare`: every timeline of a JobReport replayed once more
// with a per-sample observer, averaged into time buckets on the job's real time axis (a 30-day recording
// at 1 s is millions of samples; a page needs a few hundred points per line). Memory: buckets x series.
// The steps of one host land on one series each: a job's steps are segments of one line, the time between
// them empty buckets (a gap).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "libstallscope/job/job_report.h"

namespace stallscope {

// Mean of the samples that fell in each bucket; NaN where none did (a gap, drawn as a gap).
struct BucketedSeries {
    std::vector<double> sum;
    std::vector<int> count;
    void add(std::size_t bucket, double v);
    void merge(const BucketedSeries& other);  // bucket by bucket (another step of the same host)
    double at(std::size_t bucket) const;
    double mean() const;  // over every sample, NaN when none
    double max() const;   // largest bucket mean, NaN when none
};

// NCCL Inspector bus bandwidth (GB/s): per "collective message-size" key, the sum and number of the
// per-sample medians (their mean is the job's figure).
using BusBandwidth = std::map<std::string, std::pair<double, long>>;

struct NodeSeries {  // one host, all its steps
    std::string host;
    std::map<int, BucketedSeries> gpu_util_pct, gpu_power_w, gpu_sm_clock_mhz;  // by GPU index
    std::map<std::string, BucketedSeries> port_gbps;  // RDMA rx+tx Gbit/s by port (mlx5_0/1)
    BucketedSeries mean_gpu_util_pct;                 // the node's GPUs averaged (heatmap row)
    BucketedSeries cpu_pressure_pct, memory_pressure_pct, io_pressure_pct;  // PSI some avg10
    BusBandwidth nccl_busbw_gbs;
};

// The x axis: `buckets` buckets of `bucket_seconds`, bucket k centred on start_time + k * bucket_seconds.
struct SeriesAxis {
    double start_time = 0, bucket_seconds = 1;
    std::size_t buckets = 1;
};

// The job's span (first sample to last, every step) cut into buckets no shorter than the longest sampling
// interval of its recordings (one sample per bucket and line; shorter buckets would fall between samples
// and read as gaps), at most `max_buckets` of them.
SeriesAxis job_time_axis(const JobReport& report, std::size_t max_buckets = 240);
// The longest spacing of samples in any recording of the job (0 when none has two samples).
double sampling_interval(const JobReport& report);

struct StepSpan {  // where a step ran on the axis (all its hosts)
    std::string step_id;
    double start_time = 0, end_time = 0;
};

struct JobSeries {
    double start_time = 0, end_time = 0;  // the x axis: first bucket's centre to the last one's
    double bucket_seconds = 1;
    std::size_t buckets = 0;
    std::vector<NodeSeries> nodes;  // one per host, in the order report.nodes first names them
    std::vector<StepSpan> steps;    // report.step_summaries with samples
    std::vector<std::string> warnings;
    double bucket_time(std::size_t b) const { return start_time + bucket_seconds * static_cast<double>(b); }
};

// Nodes replayed on `threads` threads (0: one per core). `progress`, when set, is called on the calling
// thread while they replay (JobReportOptions::progress: nodes done, nodes, timeline bytes read).
using SeriesProgress = std::function<void(std::size_t done, std::size_t total, std::uint64_t bytes_read)>;
JobSeries collect_job_series(const JobReport& report, const SeriesAxis& axis, unsigned threads = 0,
                             const SeriesProgress& progress = {});
inline JobSeries collect_job_series(const JobReport& report, std::size_t max_buckets = 240) {
    return collect_job_series(report, job_time_axis(report, max_buckets));
}

}  // namespace stallscope
