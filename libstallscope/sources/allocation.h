// Keep only the GPUs the scheduler gave this job/step. Without ConstrainDevices NVML sees every GPU of
// the node, and "6 of 8 GPUs idle" would be a lie for a 2-GPU job (spank-design.md section 3).
#pragma once

#include "libstallscope/model/snapshot.h"

namespace stallscope {

// context.gpus holds Slurm's global gres indices (SLURM_STEP_GPUS / SLURM_JOB_GPUS) or GPU-/MIG- UUIDs;
// without them, the GPU-/MIG- UUIDs of CUDA_VISIBLE_DEVICES (gres Flags=env_uuid, Slurm 25.11+) are used.
// An index matches a GPU's /dev/nvidia minor number when known (stable under ConstrainDevices, which
// renumbers NVML indices), else its source index. No allocation known: nothing is filtered. If nothing
// matches, every GPU is kept and a warning says so (better a noisy profile than a blind one).
void filter_gpus_to_allocation(Snapshot& snapshot);

}  // namespace stallscope
