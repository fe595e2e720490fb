// Snapshot <-> JSON (schema stallscope.snapshot/1). The round trip is lossless for every field the
// rules read (doubles are written in shortest round-trip form, counters as exact integers), which is
// what lets `stallscope replay` reproduce a recorded verdict exactly.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

using Json = nlohmann::ordered_json;

// RFC 3339 UTC with milliseconds: 2026-11-22T05:40:01.250Z
std::string format_rfc3339(double epoch_seconds);
// Accepts RFC 3339 with Z or +00:00 and optional fraction; nullopt on anything else.
std::optional<double> parse_rfc3339(const std::string& text);

Json to_json(const Snapshot& snapshot);
Json to_json(const Rates& rates);
Json to_json(const Profile& profile);
Json to_json(const Reason& reason);
Json to_json(const StepVerdict& verdict);
Json evidence_to_json(const Evidence& evidence);

// Reads a snapshot object. Unknown keys are ignored (newer writers); a key of the wrong type makes that
// field missing and adds a warning to `problems` (naming the key), never an exception.
Snapshot snapshot_from_json(const Json& object, std::vector<std::string>& problems);

}  // namespace stallscope
