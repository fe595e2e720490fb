// Synthetic, fully populated snapshots for the sink tests and the real-daemon driver: every value the
// textfile sink can export is present, so the series count equals the documented bound exactly.
#pragma once

#include <cstddef>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope::test {

struct NodeShape {
    std::size_t gpus = 8, rdma_ports = 8, interfaces = 16;  // DGX-like; `lo` is added on top
};

// Every GPU/port/interface field set, every allow-listed counter plus a few that are not allow-listed
// (they must not show up). GPU i: power 400+i W, temperature 60+i C; mlx5_i port 1.
Snapshot full_snapshot(double time, NodeShape shape = {});

// SLOW with `reasons` distinct reasons: [0] fabric_congestion on mlx5_0/1 (warning), then alternating
// gpu_thermal_throttle (warning) / nccl_info (info) on other subjects.
Profile slow_profile(double first_seen, std::size_t reasons = 3);

}  // namespace stallscope::test
