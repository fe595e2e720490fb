// Timeline "sample" lines, written and read without a Json DOM: the helper writes one per second for the
// whole step and replay reads millions; building and freeing an ordered_json node per counter cost more
// than everything else on both sides.
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

// Reads a sample line (or a `stallscope --interval-seconds N --json` snapshot line) into `out`. Returns
// false, leaving `out` unspecified, for anything it does not read exactly as
// snapshot_from_json(Json::parse(line)) would: a line that is not a sample, invalid JSON, a field of the
// wrong type, a value snapshot_from_json would warn about. The caller then takes the nlohmann path,
// which also words the warnings. For every line it accepts, `out` equals what that path gives, and that
// path would have reported no problems.
bool read_sample_line(std::string_view line, Snapshot& out);

}  // namespace stallscope
