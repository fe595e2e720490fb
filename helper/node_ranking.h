// `stallscope nodes`: which nodes keep hurting the jobs they run. Reads the job segments the plugin wrote
// into AdminComment (libstallscope/timeline/job_comment.h) for every job of one sacct call and counts, per
// node, the jobs it ran and the jobs that named it: as the root cause (node= of a SLOW or FAIL_RISK job),
// as a straggler (stragglers=) or as missing (missing=: its helper left no verdict, often a crashed node).
// A node is only credited with what a job says about the nodes the job ran on (sacct's NodeList, from
// slurmctld): a name in a comment that is not in the job's node list is counted, never ranked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stallscope::cli {

// sacct --format order the parser expects: the controller's fields first, AdminComment last (it is the
// only field that may hold text another tool wrote).
inline constexpr const char* kNodesSacctFormat = "JobID,State,NodeList,AdminComment";

struct NodeRankingOptions {
    int min_jobs = 3;              // a node that ran fewer jobs with a verdict is listed apart, not ranked
    double drain_share = 0.5;      // a ranked node named in at least this share of its jobs ...
    int drain_min_named = 2;       // ... and in at least this many jobs is a drain candidate
    std::size_t evidence_ids = 5;  // job ids kept per node (the most recent)
};

struct NodeTally {
    std::string name;
    std::uint32_t jobs = 0;   // jobs with a stallscope verdict that ran on the node
    std::uint32_t named = 0;  // of those, jobs that named it (root cause, straggler or missing)
    std::uint32_t root_cause = 0, straggler = 0, missing = 0;
    std::map<std::string, std::uint32_t> reasons;  // root-cause code, "node_straggler", "no_verdict"
    std::vector<std::string> job_ids;              // the last evidence_ids jobs that named it
    double share() const { return jobs ? static_cast<double>(named) / jobs : 0; }
};

struct NodeRanking {
    std::size_t rows = 0;                       // jobs sacct listed
    std::size_t with_verdict = 0;               // of those, with a stallscope segment
    std::size_t malformed_rows = 0;             // lines that are not JobID|State|NodeList|AdminComment
    std::size_t bad_node_lists = 0;             // NodeList values that are not Slurm's syntax (job skipped)
    std::size_t named_outside_list = 0;         // names in a comment that the job did not run on (ignored)
    std::size_t unnamed_in_lists = 0;           // hosts a long comment only counted ("+N")
    std::size_t node_runs = 0, named_runs = 0;  // (node, job) pairs with a verdict; those naming the node
    std::vector<NodeTally> nodes;               // every node that ran a job with a verdict
    std::vector<std::size_t> ranked;  // indexes into nodes: named at least once, >= min_jobs, worst first
    std::vector<std::size_t> too_few_jobs;  // named at least once but ran fewer than min_jobs
    std::vector<std::size_t> drain;         // ranked nodes past the drain thresholds, worst first
    std::string first_bad_node_list;        // an example for the warning
    // named_runs / node_runs: how often any node is named; a node far above it is the outlier.
    double baseline_share() const { return node_runs ? static_cast<double>(named_runs) / node_runs : 0; }
};

// Collects jobs one at a time (sacct rows in order), then ranks.
class NodeRanker {
  public:
    explicit NodeRanker(NodeRankingOptions options = {}) : options_(options) {}
    void add_job(std::string_view job_id, std::string_view node_list, std::string_view admin_comment);
    void add_malformed_row() { ++result_.malformed_rows; }
    NodeRanking finish();

  private:
    NodeTally& tally(const std::string& name);
    NodeRankingOptions options_;
    NodeRanking result_;
    std::unordered_map<std::string, std::size_t> index_;  // name -> nodes[]
    std::vector<std::string> job_nodes_;                  // reused per job
};

// Feeds sacct --parsable2 --noheader output (fields kNodesSacctFormat, joined by `delimiter`) to `ranker`.
// A line without the delimiter continues the previous row's AdminComment (a comment may hold newlines).
void read_sacct_nodes_output(std::string_view output, std::string_view delimiter, NodeRanker& ranker);

// The comment's reason code as a plain word ([a-z0-9_]; anything else becomes "other"): it ends up in a
// printed scontrol Reason= and must not carry quotes or shell syntax a forged verdict could put there.
std::string plain_reason_code(std::string_view top);

}  // namespace stallscope::cli
