// The job epilog's work (slurm_spank_job_epilog, root, after every step of the job left this node), without
// SPANK symbols so tests/spank runs it: on the job's writer node only, `stallscope summarize DIR` as the
// job user when the writer helper did not leave a fresh summary; then, on every node and whatever happened
// before, the removal of the job's run_dir files. Logging goes through EpilogLog (slurm_error/_info/
// _verbose in the plugin); every job-controlled string in a message is escaped (escape.h shown()).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>

#include "spank/config.h"

namespace stallscope::spank {

struct EpilogLog {
    std::function<void(const std::string&)> error, info, verbose;
};

// A job dir holds a verdict and a timeline per node per recording step: beyond this many entries the
// scan stops and says "unknown" (the summarize child, bounded, then decides as the user).
inline constexpr std::size_t kStaleScanMaxEntries = 10000;

enum class Staleness { current = 0, stale = 1, unknown = 2, missing = 3 };

// Is DIR/summary.json missing or older than a verdict.* / timeline.* regular file of DIR (stale)?
// Metadata only. DIR is opened from / one component at a time with O_NOFOLLOW (a symlink anywhere in the
// path, a ".." component, a component that is not a directory: unknown; a component that does not exist:
// missing); more than max_entries entries or deadline_ms (CLOCK_MONOTONIC, process.h monotonic_ms) passed
// before the answer: unknown.
// Async-signal-safe (no allocation): it runs in a forked child (run_forked_as) as the job user.
Staleness summary_staleness(const char* dir, long deadline_ms, std::size_t max_entries);

// The whole hook for job `job_id` of user `uid` with one deadline (config.epilog_timeout). The
// run_dir files (<jobid>.state .result .comment .lock .batch .writer and the old <jobid>/ directory) are
// removed at the end in every case: a missing, oversized or malformed state, a spent deadline or an
// exception in the summarize part never skips that (issue 36, L1).
void run_job_epilog(const PluginConfig& config, const std::string& job_id, uid_t uid, const EpilogLog& log);

}  // namespace stallscope::spank
