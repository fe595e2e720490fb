// The depth parts of the sample line (a GPU's depth objects, the job cgroup and its pressure) written from
// the structs (snapshot_json_text_depth.cc): the bytes dump() gives of the trees snapshot_json_depth.h
// builds. Internal to libstallscope/model.
#pragma once

#include "libstallscope/model/snapshot.h"
#include "libstallscope/model/snapshot_json_text_writer.h"

namespace stallscope::json_text {

// psi_to_json(p)'s object (the node's, in host_stats, and the job cgroup's).
void write_psi(TextWriter& w, const Psi& p);
// The members add_gpu_depth_json(g, o) adds ("gpm", "interconnect", "mig", "processes", each only when
// set), written as members of the GPU object already open.
void write_gpu_depth_members(TextWriter& w, const Gpu& g);
// job_cgroup_to_json(c)'s object.
void write_job_cgroup(TextWriter& w, const JobCgroup& c);

}  // namespace stallscope::json_text
