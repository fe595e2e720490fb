// The periodic `stallscope --interval-seconds S --count N --json` CLI end to end (fork/exec, every source,
// the rules, one JSON line per sample written to a pipe), on a fixture tree: what a user running it beside
// node_exporter pays per sample. And what it is compared with at the same cadence: the CLI sleeps between
// samples, so caches and branch predictors are cold at each wake-up and a sample costs more than in a hot
// loop; node_exporter scraped back to back does not pay that, so it is also measured paced.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/node_exporter_probe.h"

namespace stallscope::bench {

// The CLI's --interval-seconds here, and the cadence of the paced figures compared with it.
constexpr double kCliIntervalSeconds = 0.01;

struct CliCost {
    double cpu_per_sample = -1;  // seconds, start-up removed; -1 when the CLI failed
    double bytes_per_line = 0;   // --json output per sample
    std::vector<double> rounds;  // each round's figure; cpu_per_sample is the lowest
    std::string error;
};

// Runs the CLI twice on `tree` (<tree>/proc, /sys, /ethtool; no NVML, no nvidia-smi, no kmsg), with
// `short_count` and `long_count` samples kCliIntervalSeconds apart, and takes the difference of the two
// runs' CPU (utime + stime, rusage of the child) per extra sample, so start-up and discovery are not counted.
// That `rounds` times; the lowest, as sample_cost's other figures.
CliCost cli_json_cost(const std::string& binary, const std::string& tree, int short_count, int long_count,
                      int rounds = 2);

// node_exporter scraped once every `interval` seconds (a fixed cadence, as the CLI samples: re-anchored
// after an overrun), over >= min_scrapes scrapes and >= 200 clock ticks of its CPU; cpu < 0 on failure.
Cost paced_scrape_cost(NodeExporter& exporter, double interval, int min_scrapes, std::string& error);

// The pread floor: every file of `files` opened once, then pread into a stack buffer per round, no
// parsing; this process's CPU per round. interval 0: back to back; else one round every `interval`
// seconds, the sleeps' system calls and wake-ups counted as in the CLI's figure: what the kernel's reads
// cost when the caches are cold.
Cost floor_cost(const std::vector<std::string>& files, int iterations, double interval = 0);

}  // namespace stallscope::bench
