// What one rank's PyTorch flight-recorder dump says about where it stands: per process group, the last
// collective it enqueued / started / completed and its newest entries. Read from the pickle PyTorch writes
// (DebugInfoWriter: `<TORCH_NCCL_DEBUG_INFO_TEMP_FILE><global rank>`), keys as FlightRecorderDetail.hpp
// writes them (version "2.x"): version, comm_lib_version, pg_config {name: {name, desc, ranks}},
// pg_status {pg_id: {last_enqueued_collective, last_started_collective, last_completed_collective}},
// entries [{record_id, pg_id, process_group (name, desc), collective_seq_id, p2p_seq_id, op_id,
// profiling_name, time_created_ns, input_sizes, input_dtypes, state, time_discovered_*_ns, retired,
// timeout_ms, is_p2p, frames, ...}]. Older dumps without pg_status get it derived from the entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/hang/pickle_reader.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

struct FlightRecorderEntry {
    std::int64_t record_id = -1, collective_seq_id = -1, p2p_seq_id = -1, op_id = -1;
    std::string profiling_name;  // "nccl:all_reduce"
    std::string state;           // scheduled | started | completed
    std::string input_sizes;     // as Python prints it: "[[1259621]]"
    std::string input_dtypes;    // "Float" (several: "Float,Half")
    std::int64_t time_created_ns = 0;
    bool is_p2p = false;
    bool operator==(const FlightRecorderEntry&) const = default;
};

// One process group as this rank sees it. `name` is the same on every rank (it identifies the group across
// ranks); `pg_id` is the key the dump's pg_status uses.
struct FlightRecorderGroup {
    std::string name, desc, pg_id;
    std::string ranks;  // pg_config's text: "[0, 1, 2, 3]"
    std::optional<std::int64_t> last_enqueued, last_started, last_completed;
    bool status_from_entries = false;         // no pg_status in the dump: derived from the entries
    std::vector<FlightRecorderEntry> newest;  // the newest collective entries, oldest first
    bool operator==(const FlightRecorderGroup&) const = default;
};

struct FlightRecorderDump {
    int rank = -1;  // global rank: from the file name (`...<rank>`), as torchfrtrace takes it
    std::string version, comm_lib_version;
    std::size_t entries = 0;  // entries in the dump
    std::vector<FlightRecorderGroup> groups;
    bool operator==(const FlightRecorderDump&) const = default;

    const FlightRecorderGroup* group(std::string_view name) const;
    // The entry of `group` with this collective sequence id, if kept.
    const FlightRecorderEntry* entry(std::string_view group, std::int64_t collective_seq_id) const;
};

inline constexpr std::size_t kNewestEntriesPerGroup = 4;

// The summary of one dump. False + error when the bytes are not a pickle of the subset or not a dict;
// missing or mistyped keys are `warnings` (a newer PyTorch may rename one), never an error.
bool read_flight_recorder_dump(std::string_view bytes, FlightRecorderDump& out,
                               std::vector<std::string>& warnings, std::string& error,
                               const PickleLimits& limits = {});

// "[0, 1, 2, 3]" -> {0, 1, 2, 3}; at most max_ranks, nothing on garbage.
std::vector<int> parse_rank_list(std::string_view text, std::size_t max_ranks = 1u << 20);

Json to_json(const FlightRecorderDump& dump);
// The evidence file's form read back (the job merge): problems for what has the wrong type.
FlightRecorderDump flight_recorder_from_json(const Json& object, std::vector<std::string>& problems);

}  // namespace stallscope
