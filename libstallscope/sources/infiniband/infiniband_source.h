// The infiniband source with its tunables exposed (tests; the factory in factories.h uses the defaults).
#pragma once

#include <memory>

#include "libstallscope/sources/source.h"
#include "libstallscope/util/roots.h"

namespace stallscope {

struct InfinibandOptions {
    // Devices, ports and counter files are listed once and re-listed every this many samples, so a hot-
    // plugged or removed HCA is noticed without a readdir per sample.
    int rediscover_every = 60;
    // ... and no sooner than this many seconds (monotonic) after the last listing: the periodic CLI
    // samples every 10 ms, where 60 samples would mean re-listing 16 ports' directories every 0.6 s.
    // At the helper's 1 s and slower, rediscover_every decides alone.
    double rediscover_min_seconds = 30.0;
    // After a read failed in a way that may mean "device gone" (ENOENT, ENODEV), re-list at the next
    // sample, but at most once per this many samples (a dangling counter file must not force a re-list
    // on every sample).
    int rediscover_after_failure_gap = 10;
};

std::unique_ptr<Source> make_infiniband_source(const Roots& roots, const InfinibandOptions& options);

}  // namespace stallscope
