// The job's side of the hang evidence: every node's evidence.<step>.<host>.<n>.json read back (the newest
// episode of each host), turned into per-rank evidence and handed to name_culprit. Used by `watch` and
// meant for the job summary / comment writer (one reader of N small files, once per job).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "libstallscope/hang/culprit.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// One evidence document's ranks, RAS mismatches and flight-recorder summaries appended to `out`; what has
// the wrong type becomes a problem, never an exception.
void add_evidence_document(const Json& document, HangEvidence& out, std::vector<std::string>& problems);

struct JobHangEvidence {
    std::vector<std::string> files;  // the evidence files read (newest episode per host)
    HangFinding finding;             // meaningful when !files.empty()
    std::vector<std::string> warnings;
};

// Reads `dir`'s evidence files (at most max_files, each at most 32 MiB).
JobHangEvidence read_job_hang_evidence(const std::string& dir, std::size_t max_files = 4096);
// Several dirs of one job (report's inputs): the newest episode per step and host over all of them.
JobHangEvidence read_job_hang_evidence(const std::vector<std::string>& dirs, std::size_t max_files = 4096);

}  // namespace stallscope
