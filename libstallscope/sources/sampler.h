// Runs every source once per sample, in order, and contains their failures: a source that throws is
// recorded in Snapshot::collector_failures (a telemetry reason later), never a failed sample.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "libstallscope/model/snapshot.h"
#include "libstallscope/sources/source.h"
#include "libstallscope/util/roots.h"

namespace stallscope {

class Sampler {
  public:
    explicit Sampler(std::vector<std::unique_ptr<Source>> sources);
    // Every source this build has, in dependency order: net/dev before ethtool, AMD before NVIDIA (so a
    // missing NVML on an AMD node is not reported), every GPU source before kmsg (Xid -> GPU mapping).
    // Driver-backed sources (NVML) run with `driver_timeout_seconds` as deadline (deadline_source.h).
    static Sampler for_node(const Roots& roots, double driver_timeout_seconds = 5.0);

    // One sample stamped with the wall clock and this host's name.
    Snapshot sample();
    // Same, with a caller-supplied time (tests, deterministic fixtures).
    Snapshot sample_at(double time);
    // The same, reusing what the sources can of `recycled`, a sample the caller no longer needs (what
    // Profiler::observe(Snapshot&&) hands back): the helper's loop allocates no counter names then.
    Snapshot sample(Snapshot&& recycled);
    Snapshot sample_at(double time, Snapshot&& recycled);

    // Sources taking longer than this are named in a warning (the sample still completes).
    void set_slow_source_warning_seconds(double seconds) { slow_seconds_ = seconds; }

  private:
    std::vector<std::unique_ptr<Source>> sources_;
    std::string host_;
    double slow_seconds_ = 2.0;
};

std::string local_hostname();
double wall_clock_now();

}  // namespace stallscope
