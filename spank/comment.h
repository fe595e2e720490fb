// Job comment segment handling (pure): sanitizing what the helper wrote and merging it into a shared
// AdminComment (reading the current AdminComment: job_record.h).
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

// What the helper wrote on fd 3: the job's writer prints its node's own segment first and the merged
// job segment after the merge, so a merge cut short by stop_timeout still leaves a comment (issue 36,
// I2). The last complete ('\n'-terminated) line that sanitize_segment accepts; a line cut by the
// SIGKILL (no '\n') is not used. nullopt when there is none.
std::optional<std::string> last_segment(std::string_view output);

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

}  // namespace stallscope::spank
