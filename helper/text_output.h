// Human-readable rendering of a profile or a step verdict (the non---json output).
#pragma once

#include <string>
#include <vector>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope::cli {

struct ProfileTextOptions {
    bool timestamp = false;  // periodic output: each block starts with the sample's time
    // The warnings to print instead of the snapshot's own (periodic output prints each warning once,
    // then only when the set changes); nullptr: all of the snapshot's.
    const std::vector<std::string>* warnings = nullptr;
    // >= 0: the job context came from another process's environment (that process's pid, 0 if gone).
    long detected_from_pid = -1;
};

std::string profile_text(const Snapshot& snapshot, const Profile& profile,
                         const ProfileTextOptions& options = {});
// One line per GPU (index, util, memory used/total, power/limit, temperature, SM clock, flags), like
// nvidia-smi's table, each line within 80 columns; "" without GPUs.
std::string gpu_table_text(const std::vector<Gpu>& gpus);
std::string verdict_text(const StepVerdict& verdict);
std::string evidence_text(const Evidence& evidence);

}  // namespace stallscope::cli
