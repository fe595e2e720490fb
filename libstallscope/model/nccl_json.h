// NcclState <-> JSON, the "nccl" key of a snapshot (written only when the sample holds NCCL data).
// Lossless like the rest of snapshot_json: replay re-judges RAS/Inspector/log evidence exactly.
#pragma once

#include <string>
#include <vector>

#include "libstallscope/model/nccl.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

Json nccl_to_json(const NcclState& state);
// Wrong types make the field missing and add a problem naming the key (never an exception).
NcclState nccl_from_json(const Json& object, std::vector<std::string>& problems);

}  // namespace stallscope
