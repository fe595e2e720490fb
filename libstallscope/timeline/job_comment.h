// The compact verdict that goes into the job's comment (visible in `sacct -o AdminComment`):
//   stallscope/1 SLOW conf=0.80 top=fabric_congestion:mlx5_0/1 gpus=8 dur=3600 node=gpu07
//   file=/p/verdict.0.gpu07.json
// Versioned and self-identifying so it can share AdminComment with other tools (jobstats' JS1:...).
// The job's writer (libstallscope/job/job_finish.h) writes the merged job segment instead, with optional
// keys:
//   stallscope/1 FAIL_RISK conf=0.90 top=rdma_port_down:n2:mlx5_0/1 nodes=3 missing=n3 stragglers=n1
//   gpus=16/24 dur=120 node=n2 file=/p/summary.json hang=culprit:rank2@n2/gpu0
// hang= (only when a node kept hang evidence) comes last, so a reader that stops at a key it does not know
// has read every other key: culprit|suspect[:rank<r>[@<host>[/gpu<g>]]], all_waiting, no_evidence.
// gpus= is "measured" or "measured/allocated" (allocated from the Slurm GPU variables, when known).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "libstallscope/model/profile.h"

namespace stallscope {

inline constexpr const char* kCommentPrefix = "stallscope/1 ";
// Written to the plugin's liveness fd instead of a segment when another step of the job already samples
// this node, so the plugin can tell that early exit from a crash (spank/comment.h kNotSamplingLine).
inline constexpr const char* kNotSamplingLine = "stallscope-not-sampling";
inline constexpr std::size_t kCommentMaxLength = 1024;

// Values are made of [A-Za-z0-9._/:@+-] only; anything else in a path is %XX-encoded so the segment
// stays one whitespace-separated key=value list. Longer than kCommentMaxLength: file= is dropped first.
// allocated_gpus < 0: unknown, written as gpus=<measured> (the old form).
std::string compose_comment_segment(const StepVerdict& verdict, int gpu_count, const std::string& node,
                                    const std::string& verdict_path, int allocated_gpus = -1);

// The merged verdict of a whole job, composed by the job's writer after the merge.
struct JobCommentFacts {
    std::string label, top;  // top: "code:host:subject" of the root-cause reason, "" if none
    double confidence = 0;
    int nodes = 0;
    std::vector<std::string> missing;     // hosts whose helper left a timeline but no verdict
    std::vector<std::string> stragglers;  // slow hosts
    int gpus_measured = 0;
    int gpus_allocated = -1;  // < 0: unknown
    double duration_seconds = 0;
    std::string node;  // the node of the root cause (or the worst node)
    std::string file;  // summary.json
    // Who a hung job waited for (the hang evidence's finding): culprit | suspect | all_waiting |
    // no_evidence; "" when no node kept hang evidence. The named rank's host and GPU: "" / -1 when none.
    std::string hang_kind, hang_host;
    int hang_rank = -1, hang_gpu = -1;
};

// Always <= kCommentMaxLength: host lists are cut with a "+N" count, then file= is dropped.
std::string compose_job_comment_segment(const JobCommentFacts& facts);

// Number of GPUs Slurm allocated to this step on this node, from SLURM_STEP_GPUS / SLURM_JOB_GPUS
// (comma-separated ids) or SLURM_GPUS_ON_NODE; -1 when none of them is set.
int allocated_gpus_from_slurm_env();

struct CommentSegment {
    std::string label, top, node, file;
    double confidence = 0;
    int gpus = 0;             // measured
    int gpus_allocated = -1;  // from "gpus=measured/allocated"; -1 when not given
    double duration_seconds = 0;
    int nodes = 0;  // job segments only (0: a per-node segment)
    std::vector<std::string> missing, stragglers;
    std::string hang;  // "culprit:rank2@n2/gpu0", "all_waiting", ...; "" when the segment has no hang=
};

// Finds our segment inside a whole comment (which may hold other tools' text) and parses it: the first
// "stallscope/1 " that starts the comment or follows "; ", never one inside another segment.
std::optional<CommentSegment> parse_comment_segment(const std::string& comment);

}  // namespace stallscope
