// The compact verdict that goes into the job's comment (visible in `sacct -o AdminComment`):
//   stallscope/1 SLOW conf=0.80 top=fabric_congestion:mlx5_0/1 gpus=8 dur=3600 node=gpu07
//   file=/p/verdict.0.gpu07.json
// Versioned and self-identifying so it can share AdminComment with other tools (jobstats' JS1:...).
#pragma once

#include <optional>
#include <string>

#include "libstallscope/model/profile.h"

namespace stallscope {

inline constexpr const char* kCommentPrefix = "stallscope/1 ";
// Written to the plugin's liveness fd instead of a segment when another step of the job already samples
// this node, so the plugin can tell that early exit from a crash (spank/comment.h kNotSamplingLine).
inline constexpr const char* kNotSamplingLine = "stallscope-not-sampling";
inline constexpr std::size_t kCommentMaxLength = 1024;

// Values are made of [A-Za-z0-9._/:@+-] only; anything else in a path is %XX-encoded so the segment
// stays one whitespace-separated key=value list. Longer than kCommentMaxLength: file= is dropped first.
std::string compose_comment_segment(const StepVerdict& verdict, int gpu_count, const std::string& node,
                                    const std::string& verdict_path);

struct CommentSegment {
    std::string label, top, node, file;
    double confidence = 0;
    int gpus = 0;
    double duration_seconds = 0;
};

// Finds our segment inside a whole comment (which may hold other tools' text) and parses it.
std::optional<CommentSegment> parse_comment_segment(const std::string& comment);

}  // namespace stallscope
