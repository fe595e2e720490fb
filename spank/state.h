// Root-owned per-job state under run_dir (written by slurmstepd as root, read by job_epilog as root).
// Never stored in the user-owned <run_dir>/<jobid>/ directory: root must not trust what the user can
// replace. Serialization is pure (tested); file access refuses anything not a root-owned regular file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope::spank {

struct JobState {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
    std::string out_dir;                     // the first step's
    std::vector<std::string> more_out_dirs;  // later steps' when they differ (output_dir=cwd, srun --chdir)
    mode_t umask = 077;  // the job's (SLURM_UMASK), for the epilog's summarize child; 077 when unknown
};

inline constexpr std::size_t kMaxOutDirs = 16;  // a job of many --chdir steps: the first 16 directories
// The output directory comes from the job (SLURM_SUBMIT_DIR, PWD): stored only up to this many bytes
// once escaped, and the whole state file stays below the reader's cap (read_root_file), so a job cannot
// make its own state unreadable (the epilog's cleanup never depends on it anyway).
inline constexpr std::size_t kMaxStoredDirBytes = 1024;
inline constexpr std::size_t kMaxStateBytes = 32768;
inline constexpr std::size_t kMaxRootFileBytes = 65536;  // read_root_file's cap

// Can `dir` be stored in the state: absolute and at most kMaxStoredDirBytes once escaped.
bool storable_out_dir(std::string_view dir);
// Adds a later step's output directory (storable, not yet known, below kMaxOutDirs, the state still
// under kMaxStateBytes); true when the state changed and must be written again.
bool add_out_dir(JobState& state, const std::string& dir);
// out_dir followed by more_out_dirs: every directory job_epilog summarizes.
std::vector<std::string> all_out_dirs(const JobState& state);

// "" when the state does not fit kMaxStateBytes (then it is not written).
std::string serialize_state(const JobState& state);
std::optional<JobState> parse_state(std::string_view text);

// "<run_dir>/<jobid>.state" and "<run_dir>/<jobid>.result" (the directory the helper reported its
// verdict file in; differs from out_dir after a fallback).
std::string state_path(std::string_view run_dir, std::string_view job_id);
std::string result_path(std::string_view run_dir, std::string_view job_id);
// "<run_dir>/<jobid>.comment": the comment rank (comment_rank in comment.h) this node last wrote.
std::string comment_mark_path(std::string_view run_dir, std::string_view job_id);

// Writes content atomically (temp + rename), mode 0600. Returns an error message or "".
std::string write_root_file(const std::string& path, std::string_view content);
// Reads a root-owned, not group/world-writable regular file (O_NOFOLLOW, ≤ 64 KiB). nullopt + *error
// when missing (error empty) or unsafe (error set).
std::optional<std::string> read_root_file(const std::string& path, std::string* error);

// mkdir -p of a root-owned 0755 directory (each component must not be a symlink once created).
std::string make_root_dir(const std::string& path);
// Removes <dir> and what is in it without following symlinks (depth-limited).
std::string remove_tree(const std::string& path);

}  // namespace stallscope::spank
