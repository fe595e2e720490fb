// Time series of a job for the HTML view and `compare`: every timeline of a JobReport replayed once more
// with a per-sample observer, averaged into a fixed number of time buckets (a 30-day recording at 1 s
// is millions of samples; a page needs a few hundred points per line). Memory: buckets x series.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "helper/job_report.h"

namespace stallscope::cli {

// Mean of the samples that fell in each bucket; NaN where none did (a gap, drawn as a gap).
struct BucketedSeries {
    std::vector<double> sum;
    std::vector<int> count;
    void add(std::size_t bucket, double v);
    double at(std::size_t bucket) const;
    double mean() const;  // over every sample, NaN when none
    double max() const;   // largest bucket mean, NaN when none
};

struct NodeSeries {
    std::string host;
    std::map<int, BucketedSeries> gpu_util_pct, gpu_power_w, gpu_sm_clock_mhz;  // by GPU index
    std::map<std::string, BucketedSeries> port_gbps;  // RDMA rx+tx Gbit/s by port (mlx5_0/1)
    BucketedSeries mean_gpu_util_pct;                 // the node's GPUs averaged (heatmap row)
    BucketedSeries cpu_pressure_pct, memory_pressure_pct, io_pressure_pct;  // PSI some avg10
};

struct JobSeries {
    double start_time = 0, end_time = 0, bucket_seconds = 1;
    std::size_t buckets = 0;
    std::vector<NodeSeries> nodes;  // in report.nodes' order
    std::vector<std::string> warnings;
    double bucket_start(std::size_t b) const { return start_time + bucket_seconds * static_cast<double>(b); }
};

// Nodes replayed on `threads` threads (0: one per core). `progress`, when set, is called on the calling
// thread while they replay (JobReportOptions::progress: nodes done, nodes, timeline bytes read).
using SeriesProgress = std::function<void(std::size_t done, std::size_t total, std::uint64_t bytes_read)>;
JobSeries collect_job_series(const JobReport& report, std::size_t buckets = 240, unsigned threads = 0,
                             const SeriesProgress& progress = {});

}  // namespace stallscope::cli
