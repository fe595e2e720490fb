// One job lookup for the views (`report`, `html`, `compare`, `watch`): a job id typed the way `seff JOBID`
// takes one becomes the job's stallscope directory. Bounded (one sacct call, 30 s), no shell.
#pragma once

#include <string>

namespace stallscope::cli {

// stat() says directory (following links: a path the user typed).
bool is_directory(const std::string& path);

// A job id as sacct takes one: 12345, an array task 12345_7, a het component 12345+1.
bool looks_like_job_id(const std::string& text);

// The directory of job `id`, tried in this order:
//   1. the `file=` of the stallscope segment in its AdminComment (written as root after the job): a
//      directory as it stands (what the slurmctld epilog writes), a file's own directory otherwise;
//   2. <WorkDir>/stallscope-<id> from the same sacct call (the plugin's default output directory; the
//      only answer while the job runs, before anything is written to the AdminComment);
//   3. ./stallscope-<id>, for a copy here or when sacct cannot be asked.
// Throws std::runtime_error "<command>: job <id>: not found (tried ...)" naming every place tried and
// sacct's own error when it failed. Which directory was chosen is said on stderr: file= and WorkDir are
// the job's choice, read as whoever runs the view.
std::string find_job_directory(const std::string& id, const std::string& sacct, const std::string& command);

// A positional input of a view: `job:<id>` is always a job id; anything else is a path when one exists
// (said on stderr when it is also shaped like a job id), else a job id when it looks like one, else
// returned unchanged for the caller to report as a missing path.
std::string resolve_view_input(const std::string& input, const std::string& sacct,
                               const std::string& command);

}  // namespace stallscope::cli
