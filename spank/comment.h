// Job comment segment handling (pure): sanitizing what the helper wrote, merging it into a shared
// AdminComment, and reading the current AdminComment out of `scontrol show job` output.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace stallscope::spank {

inline constexpr std::size_t kCommentCap = 1024;  // Slurm's Comment limit; we keep AdminComment under it
inline constexpr std::size_t kSegmentCap = 512;
inline constexpr std::string_view kSegmentPrefix = "stallscope/1 ";
// The helper's fd-3 line when it leaves the node to another step of the same job (per-node lock):
// an early exit by design, not a crash (libstallscope/timeline/job_comment.h kNotSamplingLine).
inline constexpr std::string_view kNotSamplingLine = "stallscope-not-sampling";
inline constexpr std::string_view kSegmentSeparator = "; ";

// The helper runs as the user, so its line is untrusted: keep the first line only, drop trailing
// whitespace, require the "stallscope/1 " prefix and printable ASCII, replace ';' (our separator)
// with ',', and cut at kSegmentCap. nullopt when the line is not a stallscope segment.
std::optional<std::string> sanitize_segment(std::string_view line);

// How much a segment's label says about the job, for choosing which step's verdict the job comment
// keeps: UNKNOWN 0 < FAST 1 < SLOW 2 < FAIL_RISK 3 (any real verdict beats "could not tell"); -1 when
// the segment has no known label. A later step replaces the comment only with a higher rank.
int comment_rank(std::string_view segment);

// Replaces every existing "stallscope/..." segment of `existing` by `segment`, keeping all other
// content byte for byte. Segments are separated by "; "; ours is appended at the end. If the result
// would exceed kCommentCap our segment is shortened; nullopt when even a short one does not fit
// (then the caller leaves the comment alone rather than clobber foreign content).
std::optional<std::string> merge_comment(std::string_view existing, std::string_view segment);

// `file=<path>` of a sanitized segment, or empty.
std::string segment_file(std::string_view segment);

enum class AdminCommentRead { absent, present, ambiguous };
struct ScontrolAdminComment {
    AdminCommentRead state = AdminCommentRead::ambiguous;
    std::string value;
};

// Reads AdminComment of job `job_id` from `scontrol show job <id>` (multi-line) and
// `scontrol show job -o <id>` (one-liner) output. Neither form alone is unambiguous on 22.05 (no
// --json): user-controlled fields (JobName, WorkDir, Comment, StdOut, ...) may contain newlines that
// forge lines of the multi-line form, and spaces plus "AdminComment=" that forge fields of the one-line
// form on either side of the real one. So the value is read in one place only, the multi-line form's
// line right after the (single) WorkDir line, and accepted only when: the one-liner is one line (no
// field holds a newline; WorkDir cannot change while the job runs, so a rename between the two calls
// cannot hide one there), there is exactly one WorkDir line and at most one AdminComment line, and the
// one-liner holds the same "WorkDir=<w> AdminComment=<value> " stretch (or no AdminComment after
// WorkDir when absent). Anything else → ambiguous, and the caller leaves AdminComment alone.
ScontrolAdminComment parse_scontrol_admin_comment(std::string_view multi_line, std::string_view one_line,
                                                  std::string_view job_id);

}  // namespace stallscope::spank
