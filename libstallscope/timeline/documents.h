// The timeline header line and the verdict file: what identifies a recording, in one place for the
// helper (writes them), replay and summarize (read them).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

inline constexpr const char* kVerdictSchema = "stallscope.verdict/1";

// Header from the first sample: job/step/host, the interval, the device inventory (UUIDs and PCI ids,
// so replay never depends on indices) and the thresholds in force.
Json timeline_header(const Snapshot& first, double interval_seconds,
                     const std::vector<std::pair<std::string, double>>& thresholds);

// verdict.<step>.<host>.json: identity + the StepVerdict + what went wrong while recording.
Json verdict_document(const Json& header, const StepVerdict& verdict, const std::string& timeline_path,
                      const std::vector<std::string>& warnings);
// The same plus `node_stats` (per-GPU means, per-port stats, sample counts, start/end, GPUs allocated vs
// measured: NodeStatsAccumulator::to_json() in the helper), what the job merge reads instead of the
// timeline. An addition to stallscope.verdict/1: a verdict without it (older helper) makes the merge
// replay that node's timeline. `node_stats` that is not an object is left out.
Json verdict_document(const Json& header, const StepVerdict& verdict, const std::string& timeline_path,
                      const std::vector<std::string>& warnings, const Json& node_stats);

// Inventory events between two samples: link state changes, Xids (timeline "event" lines).
std::vector<Json> events_between(const Snapshot* previous, const Snapshot& current);

}  // namespace stallscope
