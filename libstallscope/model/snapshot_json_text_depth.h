// A GPU's depth objects in the sample line written from the structs (snapshot_json_text_depth.cc): the
// bytes dump() gives of the trees snapshot_json_depth.h builds. Internal to libstallscope/model.
#pragma once

#include "libstallscope/model/snapshot.h"
#include "libstallscope/model/snapshot_json_text_writer.h"

namespace stallscope::json_text {

// The members add_gpu_depth_json(g, o) adds ("gpm", "interconnect", "mig", "processes", each only when
// set), written as members of the GPU object already open.
void write_gpu_depth_members(TextWriter& w, const Gpu& g);

}  // namespace stallscope::json_text
