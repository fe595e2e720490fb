// The periodic `stallscope --interval-seconds S --count N --json` CLI end to end (fork/exec, every source,
// the rules, one JSON line per sample written to a pipe), on a fixture tree: what a user running it beside
// node_exporter pays per sample.
#pragma once

#include <string>

namespace stallscope::bench {

struct CliCost {
    double cpu_per_sample = -1;  // seconds, start-up removed; -1 when the CLI failed
    double bytes_per_line = 0;   // --json output per sample
    std::string error;
};

// Runs the CLI twice on `tree` (<tree>/proc, /sys, /ethtool; no NVML, no nvidia-smi, no kmsg), with
// `short_count` and `long_count` samples 10 ms apart, and takes the difference of the two runs' CPU (utime +
// stime, rusage of the child) per extra sample, so start-up and discovery are not counted.
CliCost cli_json_cost(const std::string& binary, const std::string& tree, int short_count, int long_count);

}  // namespace stallscope::bench
