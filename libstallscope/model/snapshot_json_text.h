// The periodic `--json` line written straight from the structs: byte for byte the compact dump() of the
// tree that sample_line_to_json builds, without building it. On a big node the line is ~50 KB of ~2 000
// counters; building the nlohmann tree (an allocation per key and value) and walking it again was most
// of the CLI's per-sample cost beyond its sources. tests/unit/snapshot_json_text_test.cc holds the two
// forms to the same bytes on every fixture node and scenario sample, so they cannot drift.
#pragma once

#include <span>
#include <string>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// One sample as the CLI prints it: the snapshot's object, then "rates" (when there are rates) and
// "profile"; `more_warnings` go after the snapshot's own warnings, `more_context`'s members (an object,
// or null) after the context's.
struct SampleLine {
    const Snapshot& snapshot;
    const Rates* rates = nullptr;
    const Profile& profile;
    std::span<const std::string> more_warnings = {};
    const Json* more_context = nullptr;
};

// The tree: what the one-shot CLI indents, and the reference for the text below.
Json sample_line_to_json(const SampleLine& line);

// Appends sample_line_to_json(line).dump()'s bytes. False, with `out` partly written, where it cannot
// promise them: a string of ill-formed UTF-8 (dump() checks UTF-8 and may throw); then use the tree.
bool append_sample_line_json(std::string& out, const SampleLine& line);

// The parts, each appending to_json(x).dump()'s bytes (false: as above).
bool append_snapshot_json(std::string& out, const Snapshot& snapshot);
bool append_rates_json(std::string& out, const Rates& rates);
bool append_profile_json(std::string& out, const Profile& profile);

}  // namespace stallscope
