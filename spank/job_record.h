// Reading a job's AdminComment from its job record in JSON (pure; tests/spank), the form
// `scontrol --json show job <id>` prints on Slurm >= 23.02 (data_parser v0.0.39 and later) and
// `stallscope-slurm-job --json show job <id>` prints from libslurm's slurm_load_job() on every supported
// release (22.05's scontrol has no --json; spank/slurm_job.cc). Every field is a JSON string, so no
// JobName, Comment or WorkDir content can move a field boundary; the text forms of `scontrol show job`
// are not read at all any more (issue 36, M1).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stallscope::spank {

// What the job reader may print: larger output (or output the reader cut at this size) is refused.
inline constexpr std::size_t kJobRecordCap = 256 * 1024;
// Nesting deeper than this is refused before anything is built from it (scontrol's job record nests
// about 8 levels: jobs[] > job > job_resources > nodes > allocation[] > sockets[] > cores[] > ...).
inline constexpr int kJobRecordMaxDepth = 32;

enum class AdminCommentRead { absent, present, ambiguous };
struct JobAdminComment {
    AdminCommentRead state = AdminCommentRead::ambiguous;
    std::string value;  // present: the AdminComment, byte for byte
    std::string why;    // ambiguous: one line saying why (for the slurmd log; may quote the reader's error)
};

// AdminComment of job `job_id` (decimal) in the reader's JSON: {"jobs": [{"job_id": N, ...,
// "admin_comment": "..."}], ...}. Exactly one record of `jobs` must have job_id N (an array's records
// of other tasks are skipped; two records claiming N are ambiguous). job_id may be a number or a
// data_parser number object {"set": true, "number": N}. The comment is the record's "admin_comment"
// (every job-info data_parser version) or "comment": {"administrator": ...} (the slurmdb form); a
// record with neither key, or with a value that is not a string or null, is ambiguous, never absent
// (a format we do not know must not wipe foreign content). "" and null are absent. Also ambiguous:
// output larger than kJobRecordCap, nesting deeper than kJobRecordMaxDepth, a repeated key in any
// object, anything that is not exactly one JSON value, and a non-empty "errors" array.
JobAdminComment parse_job_record_json(std::string_view json, std::string_view job_id);

}  // namespace stallscope::spank
