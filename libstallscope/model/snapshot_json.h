// Snapshot <-> JSON (schema stallscope.snapshot/1). The round trip is lossless for every field the
// rules read (doubles are written in shortest round-trip form, counters as exact integers), which is
// what lets `stallscope replay` reproduce a recorded verdict exactly.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

using Json = nlohmann::ordered_json;

// RFC 3339 UTC with milliseconds: 2026-11-22T05:40:01.250Z
std::string format_rfc3339(double epoch_seconds);
// The same text appended to `out` (no string of its own: the --json line writer's per-sample path).
void append_rfc3339(std::string& out, double epoch_seconds);
// Its time of day, HH:MM:SS (UTC), as the text views print a moment of a job.
std::string format_clock_time(double epoch_seconds);
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

// What snapshot_from_json reads, one top-level key at a time (in its order): the v2 timeline reader
// re-reads only the fields a change record touched instead of the whole snapshot.
enum class SnapshotField {
    time,  // "unix_time", else "time"
    host,
    context,
    host_stats,
    interfaces,
    rdma,
    gpus,
    xid_events,
    nccl,
    job_cgroup,
    collector_failures,
    warnings,
    count,
    none = count  // "schema", or a key this reader does not know
};
SnapshotField snapshot_field(std::string_view key);
// Replaces s's field with what `object` holds (absent: the default), as snapshot_from_json would.
void read_snapshot_field(const Json& object, SnapshotField field, Snapshot& s,
                         std::vector<std::string>& problems);
// Replaces one element of interfaces / rdma / gpus; false (nothing changed) when the element is not an
// object or the array's length differs from s's (then re-read the whole field).
bool read_snapshot_element(const Json& object, SnapshotField field, std::size_t index, Snapshot& s,
                           std::vector<std::string>& problems);

// The JSON of each part of to_json(snapshot), exactly as to_json writes it: the v2 timeline writer
// serialises only the parts that changed since the previous sample.
Json context_to_json(const JobContext& context);
Json host_stats_to_json(const HostStats& stats);
Json interface_to_json(const NetInterface& interface);
Json rdma_port_to_json(const RdmaPort& port);
Json gpu_to_json(const Gpu& gpu);
// Written only when the job has a cgroup ("job_cgroup" absent otherwise).
Json job_cgroup_to_json(const JobCgroup& cgroup);
Json xid_events_to_json(const std::vector<XidEvent>& events);
Json collector_failures_to_json(const std::map<std::string, std::string>& failures);

}  // namespace stallscope
