// Who is the job waiting for? A pure function over what every node captured when the hang was
// confirmed: flight-recorder summaries per rank, NCCL RAS launch-count mismatches, each rank's GPU
// (utilization, SM activity, power, Xid) and what its main thread was doing (/proc).
//
// Each source names ranks on its own:
//  - flight recorder: per process group, ranks whose last enqueued collective is below the group's highest
//    (NVRx's rule; torchfrtrace's "missing ranks"); all equal with the last completed below it: every rank
//    arrived and waits inside the collective;
//  - RAS: the lowest launch counts of a persistent mismatch (a rank that never launched the collective);
//  - GPU: while most ranks' GPUs spin (busy, no SM activity / low power), the few that are idle, computing,
//    or raised an Xid;
//  - /proc: while most ranks' main threads do one thing, the few doing something else (D state, sleeping).
// Two sources naming the same rank make a "culprit", one a "suspect"; none, with evidence present: "all
// ranks waiting inside the collective: look at the fabric".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libstallscope/hang/flight_recorder.h"
#include "libstallscope/hang/proc_threads.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

struct RankGpuState {
    std::optional<double> utilization_pct, sm_active_pct, power_w, power_limit_w;
    bool xid = false;
};

struct RankMainThread {
    ThreadActivity activity = ThreadActivity::unknown;
    char state = '?';
    std::string wchan;
    double cpu_share = 0;  // of one core, between the two passes
    int threads_in_d = 0;
};

struct RankEvidence {
    int rank = -1;
    std::string host;
    int gpu = -1;  // index on its node
    long pid = -1;
    std::optional<FlightRecorderDump> flight_recorder;
    std::optional<RankGpuState> gpu_state;
    std::optional<RankMainThread> main_thread;
};

// One persistent RAS launch-count mismatch (nccl_collective_hang's evidence).
struct RasMismatch {
    std::string function;  // AllReduce, ...
    std::uint64_t max_count = 0;
    std::vector<std::pair<int, std::uint64_t>> laggards;  // (rank, count)
};

struct HangEvidence {
    std::vector<RankEvidence> ranks;
    std::vector<RasMismatch> ras;
};

enum class HangFindingKind { culprit, suspect, all_waiting, no_evidence };
const char* to_string(HangFindingKind kind);

struct HangFinding {
    HangFindingKind kind = HangFindingKind::no_evidence;
    int rank = -1;
    std::string host;
    int gpu = -1;
    long pid = -1;
    std::string collective;             // "default_pg #20585 nccl:all_reduce [[1259621]] Float"
    std::vector<std::string> sources;   // those naming this rank: flight_recorder, ras, gpu, proc
    std::vector<std::string> evidence;  // one phrase per source that said anything
    std::vector<int> other_laggards;    // further ranks the flight recorder or RAS put behind
    int waiting_ranks = 0;              // ranks seen waiting (everyone else with evidence)
    std::string line;                   // the one line for the summary, the comment and `watch`
};

HangFinding name_culprit(const HangEvidence& evidence);

Json to_json(const HangFinding& finding);

}  // namespace stallscope
