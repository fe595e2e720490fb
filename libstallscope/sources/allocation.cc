#include "libstallscope/sources/allocation.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

#include "libstallscope/util/parse_number.h"

namespace stallscope {

namespace {

bool is_uuid(std::string_view id) {
    return id.starts_with("GPU-") || id.starts_with("MIG-");
}

// The step's GPUs: Slurm's gres list when it gave one; else the UUIDs of CUDA_VISIBLE_DEVICES, which
// Slurm 25.11+ writes with gres Flags=env_uuid and which name GPUs node-wide. Indices there are not used:
// under ConstrainDevices they count from 0 inside the job's device cgroup, not the node's numbering.
std::vector<std::string> allocated_ids(const JobContext& context) {
    if (!context.gpus.empty()) return context.gpus;
    std::vector<std::string> out;
    for (const auto& d : context.visible_devices)
        if (is_uuid(d)) out.push_back(d);
    return out;
}

}  // namespace

void filter_gpus_to_allocation(Snapshot& snapshot) {
    const auto wanted = allocated_ids(snapshot.context);
    if (wanted.empty() || snapshot.gpus.empty()) return;
    std::set<std::uint64_t> indices;
    std::set<std::string> uuids;
    for (const auto& w : wanted) {
        if (auto n = parse_u64(w))
            indices.insert(*n);
        else
            uuids.insert(w);
    }
    auto allocated = [&](const Gpu& g) {
        if (!g.uuid.empty() && uuids.count(g.uuid)) return true;
        const int id = g.minor_number ? *g.minor_number : g.index;
        return id >= 0 && indices.count(static_cast<std::uint64_t>(id)) > 0;
    };
    const auto matched = std::count_if(snapshot.gpus.begin(), snapshot.gpus.end(), allocated);
    if (matched == 0) {
        snapshot.warnings.push_back("allocated GPUs (" + std::to_string(wanted.size()) +
                                    ") match none of the node's GPUs by minor number, index or UUID; "
                                    "profiling every visible GPU");
        return;
    }
    std::set<int> kept_index;
    std::vector<Gpu> kept;
    for (auto& g : snapshot.gpus)
        if (allocated(g)) {
            kept_index.insert(g.index);
            kept.push_back(std::move(g));
        }
    snapshot.gpus = std::move(kept);
    // Xids of other jobs' GPUs are not this job's problem; Xids mapped to no GPU (gpu_index -1) stay.
    std::erase_if(snapshot.xid_events,
                  [&](const XidEvent& e) { return e.gpu_index >= 0 && !kept_index.count(e.gpu_index); });
}

}  // namespace stallscope
