// Timeline "sample" lines, written without a Json DOM: the helper writes one per second for the whole
// step, and building and dumping an ordered_json of ~1000 counters cost more than the rest of the line.
//
// Written: {"type":"sample", <exactly what to_json(snapshot) dumps, same keys, order and numbers>,
//           "summary": {"label", "confidence", "bottleneck_hint", "reasons": ["code:subject", ...],
//                       "unknown_reason" (UNKNOWN only)}}
// The summary is for a human reading the file (which sample went SLOW, and why, in one glance); nothing
// reads it back: replay recomputes every sample's profile from the snapshot. Timelines written before
// the summary carry the full per-sample "profile" object instead; readers skip either.
#pragma once

#include <string>
#include <string_view>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// Appends one sample line (no trailing newline) to `out`. Reuse `out` across samples: once it has grown to
// a line's size the helper's per-sample write allocates nothing for the text.
void append_sample_line(std::string& out, const Snapshot& snapshot, const Profile& profile);

}  // namespace stallscope
