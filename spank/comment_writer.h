// Writing the job comment from slurmstepd (root): the job reader for the current AdminComment, then
// `scontrol update` (no SPANK symbols: tests/spank runs it against a fake Slurm).
#pragma once

#include <string>

#include "spank/config.h"

namespace stallscope::spank {

// Writes the segment into the configured comment field of a running job (bounded time: one deadline of
// kScontrolCallsPerComment calls). Returns "" or a message saying what failed and why (job-controlled
// text in it is escaped). `update_id` names the job in `scontrol update` when that differs from `job_id`:
// an array task is "<array id>_<task id>", since JobId=<array id> would update every task of the array
// (and fail once one of them has finished).
std::string write_job_comment(const PluginConfig& config, const std::string& job_id,
                              const std::string& segment, const std::string& update_id = "");

}  // namespace stallscope::spank
