// The job's *writer* helper at its stop (spank/README.md "One job verdict, written once"): after its
// own verdict, wait (bounded) until every timeline of the job dir has its verdict, merge the job dir
// once, write summary.json/summary.txt atomically, and compose the job comment segment that the plugin
// writes with one scontrol update. Every other helper only writes its own verdict.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libstallscope/job/job_report.h"
#include "libstallscope/timeline/job_comment.h"

namespace stallscope {

// Hosts (the part of "timeline.<step>.<host>.jsonl" after the step) whose timeline has no
// "verdict.<step>.<host>.json" next to it: helpers still finishing, or dead. Sorted, unique.
std::vector<std::string> hosts_without_verdict(const std::string& dir);

// Polls hosts_without_verdict every 100 ms until it is empty or `wait_seconds` passed; returns
// what is still missing then.
std::vector<std::string> wait_for_verdicts(const std::string& dir, double wait_seconds);

// summary.txt's text for a built report. The merge writes the file but does not own its wording: that is
// the CLI's job view (helper/job_report_text.h, what `stallscope report` prints), passed in so that this
// library does not depend on the views.
using JobSummaryText = std::function<std::string(const JobReport&)>;

// summary.json + summary.txt, each written atomically (what `stallscope summarize` writes).
bool write_job_summary(const std::string& dir, const JobReport& report, const JobSummaryText& summary_text,
                       std::string& error);

// The merged verdict as comment facts: worst label, the first reason that pushes towards it (with
// its node), every straggler node, the hosts in `missing`, measured GPUs.
JobCommentFacts job_comment_facts(const JobReport& report, const std::vector<std::string>& missing,
                                  const std::string& summary_path);

struct JobFinish {
    std::string segment;  // the job segment; "" when nothing could be merged (caller keeps its own)
    std::vector<std::string> warnings;
};

// wait_for_verdicts + build_job_report + write_job_summary + compose_job_comment_segment.
JobFinish finish_job(const std::string& dir, double merge_wait_seconds, int allocated_gpus_per_node,
                     const JobSummaryText& summary_text);

}  // namespace stallscope
