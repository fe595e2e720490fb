// The timeline reader's invariant (doc/timeline-format.md, section 7), as a function the reader calls in
// a build with invariant checks (meson option invariant_checks: on in a sanitizer build) and tests call
// directly: the sample the fast reader keeps is what the whole-sample reading of its tree gives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/timeline/change_lists.h"
#include "libstallscope/timeline/timeline.h"

namespace stallscope {

// "" when `kept` is exactly (to_json byte for byte) the Snapshot snapshot_from_json reads from `tree`
// without a problem; else what differs: the JSON Pointer of the first place they differ with both values
// there (cut short), or the tree's first problem.
std::string kept_sample_difference(const Json& tree, const Snapshot& kept);

// The whole invariant, with the tree caught up (KeptOnly::sync): kept_sample_difference, and the reader's
// cached locations: every list entry stamped with `layout` points at the counter (gauge) of `kept` its
// pointer names, every entry set in `kept` alone (stamped `epoch`) has such a location, and `moving` is
// kept_counters of the "keys" list. "" when all hold, else the first that does not.
std::string reader_state_difference(const Json& tree, Snapshot& kept, const CounterList& keys,
                                    const GaugeList& gauges, std::uint64_t layout, std::uint64_t epoch,
                                    const std::vector<const Counter*>& moving);
// reader_state_difference, or the process ends (abort, after naming `where` and the difference on stderr).
void abort_unless_reader_state(const Json& tree, Snapshot& kept, const CounterList& keys,
                               const GaugeList& gauges, std::uint64_t layout, std::uint64_t epoch,
                               const std::vector<const Counter*>& moving, const std::string& where);

// The whole-sample oracle's last sample (a reader with TimelineReadLimits::whole_samples fed the same
// lines), as its to_json text.
struct OracleSample final : TimelineVisitor {
    std::string sample_json;
    void sample(Snapshot&& s) override { sample_json = to_json(s).dump(); }
    void sample_view(const Snapshot& s) override { sample_json = to_json(s).dump(); }
};
// `lent` is the oracle's sample to the byte, or the process ends (abort, naming `where` and the first
// difference on stderr).
void abort_unless_oracle_sample(const std::string& oracle_json, const Snapshot& lent,
                                const std::string& where);

}  // namespace stallscope
