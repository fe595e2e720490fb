// Who writes the job comment and merges the job dir (spank/README.md "One job verdict, written once"),
// the root-owned per-job marks and lock under run_dir, and which fallback directory job_epilog may
// summarize. Pure and header-only: used by ctx_stepd.cc / ctx_epilog.cc and tests/spank.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope::spank {

inline constexpr uint32_t kBatchStepId = 0xfffffffb;  // slurm.h SLURM_BATCH_SCRIPT
inline constexpr unsigned kDefaultMergeWait = 5;      // seconds the writer waits for other verdicts

inline std::string run_file(std::string_view run_dir, std::string_view job_id, std::string_view suffix) {
    std::string dir(run_dir);
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir + "/" + std::string(job_id) + std::string(suffix);
}
// The sampler lock (root-owned 0600; held by the sampling step's slurmstepd), the mark a recording
// batch step leaves on its node, and the mark of the node whose helper is the job's writer.
inline std::string lock_path(std::string_view run_dir, std::string_view job_id) {
    return run_file(run_dir, job_id, ".lock");
}
inline std::string batch_mark_path(std::string_view run_dir, std::string_view job_id) {
    return run_file(run_dir, job_id, ".batch");
}
inline std::string writer_mark_path(std::string_view run_dir, std::string_view job_id) {
    return run_file(run_dir, job_id, ".writer");
}

// The batch step's helper is the writer of a batch job. A step that is not the batch step writes only
// from its node 0 and only when no recording batch step ran on that node (the batch step's mark, a
// root-owned file: no job-controlled environment decides this). srun-only jobs and salloc: each
// step's node 0 (bounded by the "more telling" rank rule in ctx_stepd.cc).
inline bool is_job_writer(uint32_t step_id, uint32_t node_id, bool batch_step_recorded_here) {
    if (step_id == kBatchStepId) return true;
    return node_id == 0 && !batch_step_recorded_here;
}

// merge_wait must leave the helper time to merge and print within stop_timeout (after which the
// plugin SIGKILLs it): at most stop_timeout - 2 s, at most kDefaultMergeWait.
inline unsigned merge_wait_for(unsigned stop_timeout) {
    return stop_timeout > 2 ? std::min(kDefaultMergeWait, stop_timeout - 2) : 0;
}

// record argv without "--lock-file PATH": the plugin holds the lock now (older plugins passed a
// user-owned lock file; the helper still accepts it when run by hand).
inline std::vector<std::string> without_lock_file(std::vector<std::string> argv) {
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
        if (argv[i] == "--lock-file") {
            argv.erase(argv.begin() + static_cast<std::ptrdiff_t>(i),
                       argv.begin() + static_cast<std::ptrdiff_t>(i) + 2);
            break;
        }
    return argv;
}

// The helper's private fallback is "<TMPDIR or /tmp>/stallscope-<uid>/<leaf of out_dir>"
// (helper/output_dir.cc). job_epilog accepts a reported directory only in exactly that form: absolute,
// no empty, "." or ".." component, parent named stallscope-<uid>, leaf equal to out_dir's leaf.
inline bool accepted_fallback_dir(std::string_view dir, uid_t uid, std::string_view out_dir) {
    if (dir.empty() || dir.front() != '/' || dir.back() == '/' || dir.size() > 4096) return false;
    std::vector<std::string_view> parts;
    for (std::size_t at = 1; at <= dir.size();) {
        const std::size_t slash = std::min(dir.find('/', at), dir.size());
        const std::string_view part = dir.substr(at, slash - at);
        if (part.empty() || part == "." || part == "..") return false;
        parts.push_back(part);
        at = slash + 1;
    }
    const std::size_t leaf_at = out_dir.rfind('/');
    const std::string_view leaf = leaf_at == std::string_view::npos ? out_dir : out_dir.substr(leaf_at + 1);
    return parts.size() >= 2 && !leaf.empty() && parts.back() == leaf &&
           parts[parts.size() - 2] == "stallscope-" + std::to_string(uid);
}

}  // namespace stallscope::spank
