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
};

inline constexpr std::size_t kMaxOutDirs = 16;  // a job of many --chdir steps: the first 16 directories

// Adds a later step's output directory (absolute, not yet known, below kMaxOutDirs); true when the
// state changed and must be written again.
bool add_out_dir(JobState& state, const std::string& dir);
// out_dir followed by more_out_dirs: every directory job_epilog summarizes.
std::vector<std::string> all_out_dirs(const JobState& state);

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
// Creates <dir> 0700 owned by uid:gid, or accepts an existing real directory owned by uid.
std::string make_user_dir(const std::string& path, uid_t uid, gid_t gid);
// Removes <dir> and what is in it without following symlinks (depth-limited).
std::string remove_tree(const std::string& path);

}  // namespace stallscope::spank
