// JSON of the issue-15 depth data: GPM metrics, NVLink/PCIe counters, MIG instance and processes per
// GPU, and the job's own cgroup. Each is written only when its source filled it (an absent key means
// "not measured", never 0), and read back exactly, so recorded timelines replay to the same verdict.
// Exposed (not private to snapshot_json.cc) so the timeline writer can emit the same objects.
#pragma once

#include <vector>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

Json psi_to_json(const Psi& psi);
Json gpm_to_json(const GpmMetrics& gpm);
Json interconnect_to_json(const GpuInterconnect& links);
Json mig_to_json(const MigInstance& mig);
Json processes_to_json(const std::vector<GpuProcess>& processes);
Json job_cgroup_to_json(const JobCgroup& cgroup);

// Adds the optional depth keys of one GPU ("gpm", "interconnect", "mig", "processes") to its object.
void add_gpu_depth_json(const Gpu& gpu, Json& object);
// Reads them back (keys absent: the optionals stay empty).
void read_gpu_depth(const json_fields::Reader& r, Gpu& gpu);

Psi read_psi(const json_fields::Reader& r);
JobCgroup read_job_cgroup(const json_fields::Reader& r);

}  // namespace stallscope
