// Per-interval deltas of every cumulative counter in two snapshots (the only place that knows about
// counter wrap and reset; see counter_delta.h).
#pragma once

#include <map>
#include <string>

#include "libstallscope/model/counter_delta.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

// entity (interface name, "mlx5_0/1", GPU uuid, "host") -> counter name -> delta
using DeltaTable = std::map<std::string, std::map<std::string, CounterDelta>>;

struct Rates {
    double interval_seconds = 0;
    DeltaTable host;              // "host" -> oom_kills, psi *_total_us; "job_cgroup" -> its counters
    DeltaTable interfaces;        // net/dev columns and ethtool pause fields
    DeltaTable rdma_counters;     // ports/N/counters
    DeltaTable rdma_hw_counters;  // ports/N/hw_counters
    DeltaTable gpus;              // keyed by uuid (or "gpu<index>"): energy, violations, ECC

    // Convenience for rules: the delta of one counter, nullptr when it was not comparable.
    const CounterDelta* find(const DeltaTable& table, const std::string& entity,
                             const std::string& counter) const;
};

// Compare two samples of the same node. Counters present in only one of them produce no delta
// (missing-then-present is not an event); a value that went down is a reset (no negative rate).
Rates compute_rates(const Snapshot& previous, const Snapshot& current);

// Key for a GPU in Rates::gpus and in per-GPU rule state: uuid when known, else "gpu<index>".
std::string gpu_key(const Gpu& gpu);

}  // namespace stallscope
