// PyTorch flight-recorder variables for a recording step (issue 41; the decision table is
// doc/hang-evidence.md §1): pure decision plus the root-side preparation of the FIFO directory. No SPANK
// symbols; compiled into the plugin and tests/spank.
//
// Never against the user: a job that set TORCH_NCCL_TRACE_BUFFER_SIZE or TORCH_FR_BUFFER_SIZE (to
// anything, 0 and "" included) gets none of these variables, and each of the others is added only when
// the job lacks it. TORCH_NCCL_DEBUG_INFO_PIPE_FILE is the dangerous one: PyTorch's monitor thread
// TORCH_CHECKs unlink/mkfifo/open of <prefix><rank>.pipe, so a missing, foreign or full directory aborts
// the rank. It is set only when the plugin (root, before any task) made and checked that directory.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stallscope::spank {

inline constexpr const char* kFlightRecorderEntries = "2000";  // upstream's current default

struct FlightRecorderPlan {
    std::vector<std::pair<std::string, std::string>> set;  // in order; none of them is in the job env
    std::string note;  // "" or one line for the slurmd log: why nothing, or why no pipe
};

// enabled: plugstack flight_recorder (1 by default). dump_prefix: "<out dir>/torch-fr-" (the value
// nccl_env uses too). pipe_prefix: "<checked dir>/frpipe.<step>." or "" when the directory is not usable,
// with pipe_problem saying why.
FlightRecorderPlan plan_flight_recorder_env(bool enabled, const std::vector<std::string>& job_env,
                                            std::string_view dump_prefix, std::string_view pipe_prefix,
                                            std::string_view pipe_problem);

// Why a FIFO directory cannot be trusted with PyTorch's mkfifo ("" when it can): a directory owned by
// `uid`, mode 0700 exactly, with free inodes and blocks, on a node-local filesystem (`fs_type`, statfs's
// f_type: NFS, Lustre, GPFS, CIFS/SMB, BeeGFS, CephFS, FUSE are refused).
std::string pipe_dir_problem(const struct stat& st, const struct statvfs& vfs, long fs_type, uid_t uid);

// As root in init_post_opt: creates `dir` (its parent, run_dir, exists) for uid:gid with mode 0700, or
// takes the one an earlier step of the job made, then checks it with pipe_dir_problem. "" or why not.
std::string prepare_pipe_dir(const std::string& dir, uid_t uid, gid_t gid);

}  // namespace stallscope::spank
