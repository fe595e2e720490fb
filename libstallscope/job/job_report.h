// A job seen through all its recordings (one per step per node): per-node verdicts, per-GPU and per-port
// statistics, the merged job verdict, stragglers and worst node/port, plain-language notes.
// Used by `report` (what an admin reads first) and `summarize` (summary.json/.txt, written once per job).
//
// The merge reads the N small verdict.<step>.<host>.json files (their `node_stats` carry the per-GPU and
// per-port figures); a timeline is replayed only for a recording whose verdict is missing, unreadable or
// written by a helper before node_stats existed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/hang/culprit.h"
#include "libstallscope/job/node_stats.h"
#include "libstallscope/model/profile.h"
#include "libstallscope/rules/thresholds.h"
#include "libstallscope/util/printable.h"

namespace stallscope {

struct NodeRecording {
    std::string host, step_id, timeline_path, verdict_path;
    StepVerdict verdict;  // the node's own verdict: from its verdict file, else replayed
    // Its samples, times and allocated GPUs; its GPU and port rows are moved to JobReport::gpus/ports
    // when the job is built (NodeRows::of_node).
    NodeStats stats;
    int gpus_measured = 0;                    // GPUs with a utilization figure
    std::optional<double> mean_gpu_util_pct;  // empty: no GPU data
    std::string source;                       // "verdict" | "replay" (how the merge got it)
    bool verdict_recorded = false;            // a verdict file or a timeline verdict line exists
    bool incomplete = false;                  // no verdict at all, or no sample: recording_incomplete
    bool running = false;     // no verdict yet, but its helper wrote a sample moments ago: still recording
    bool unreadable = false;  // no verdict and a timeline that is not one: left out of the job
    bool straggler = false;   // GPUs well below the step's median node
    std::string label;        // the node row's label: its own, raised to SLOW when it is a straggler
};

// Every node's GPU (or port) rows, in node order: each node's rows stay in the vector its recording was
// read into, joined without a copy. One job-wide vector held the rows twice while it was filled (the
// nodes' and its own): at 16 000 nodes of 8 GPUs and 8 ports, ~65 MB more at the merge's peak.
template <class Row>
class NodeRows {
  public:
    class const_iterator {
      public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = Row;
        using difference_type = std::ptrdiff_t;
        using pointer = const Row*;
        using reference = const Row&;
        const_iterator() = default;
        const_iterator(const std::vector<std::vector<Row>>* blocks, std::size_t block)
            : blocks_(blocks), block_(block) {
            skip_empty();
        }
        reference operator*() const { return (*blocks_)[block_][row_]; }
        pointer operator->() const { return &**this; }
        const_iterator& operator++() {
            if (++row_ == (*blocks_)[block_].size()) ++block_, row_ = 0, skip_empty();
            return *this;
        }
        const_iterator operator++(int) {
            const_iterator before = *this;
            ++*this;
            return before;
        }
        bool operator==(const const_iterator& o) const { return block_ == o.block_ && row_ == o.row_; }

      private:
        void skip_empty() {
            while (block_ < blocks_->size() && (*blocks_)[block_].empty()) ++block_;
        }
        const std::vector<std::vector<Row>>* blocks_ = nullptr;
        std::size_t block_ = 0, row_ = 0;
    };

    const_iterator begin() const { return {&blocks_, 0}; }
    const_iterator end() const { return {&blocks_, blocks_.size()}; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // The rows of JobReport::nodes[node].
    const std::vector<Row>& of_node(std::size_t node) const { return blocks_[node]; }
    void reserve_nodes(std::size_t nodes) { blocks_.reserve(nodes); }
    void add_node(std::vector<Row>&& rows) {
        size_ += rows.size();
        blocks_.push_back(std::move(rows));
    }

  private:
    std::vector<std::vector<Row>> blocks_;
    std::size_t size_ = 0;
};

struct StepSummary {
    std::string step_id;
    int nodes = 0, samples = 0;
    double start_time = 0, end_time = 0;  // over the recordings with samples
    double duration_seconds() const { return end_time > start_time ? end_time - start_time : 0; }
};

struct JobReport {
    std::string job_id, user, job_name;
    std::vector<NodeRecording> nodes;  // one per recording (step x host), by step then host
    NodeRows<GpuStats> gpus;           // every node's, in node order, then by index
    NodeRows<PortStats> ports;         // every node's, in node order
    StepVerdict
        verdict;    // merged: worst label, every node's reasons (subject host:subject), root cause first
    int steps = 0;  // distinct step ids
    int hosts = 0;  // distinct hosts
    std::vector<StepSummary> step_summaries;
    std::string worst_node, straggler_node, straggler_gpu, worst_port;
    std::vector<std::string> straggler_nodes;  // every straggler host, natural order
    // Hosts with a recording_incomplete recording: no verdict (no file, no timeline verdict line) or not
    // a single sample.
    std::vector<std::string> missing_nodes;
    // Hosts whose helper is still recording (find_running_recordings): the job's verdict is provisional.
    std::vector<std::string> running_nodes;
    std::optional<ReasonSummary> root_cause;  // verdict.reasons[0]; subject "host:subject" when >1 host
    std::string root_cause_node;              // the host root_cause is about
    std::vector<std::string> notes;
    std::vector<std::string> warnings;
    // The hang evidence the helpers kept next to the recordings (evidence.<step>.<host>.<n>.json, the
    // newest episode per node) and the rank it names; hang_files empty: no node captured any.
    std::vector<std::string> hang_files;
    HangFinding hang;
};

struct JobReportOptions {
    // `report --rules FILE`: every recording with a timeline is re-profiled with these thresholds (its
    // verdict file was decided with the recorded ones); a recording without a timeline keeps its verdict
    // and says so in the warnings.
    std::optional<Thresholds> rules;
    // Recordings loaded in parallel (replays dominate); 0: one thread per core.
    unsigned threads = 0;
    // When set, called on the calling thread while the recordings load: at once, about every 200 ms, and
    // when all are loaded; with the recordings loaded, their number and the timeline bytes read so far.
    std::function<void(std::size_t done, std::size_t total, std::uint64_t bytes_read)> progress;
    // The job (or step) is known to be over: the epilog's summarize and the writer's merge at step end. A
    // timeline without a verdict is then a helper that died, however recent its last sample (a SIGKILLed
    // helper's last sample is seconds old): never `running`.
    bool job_ended = false;
};

// Directories: their verdict.*.json and timeline.* files, paired by <step>.<host>. Files: verdict.*.json
// is read as a verdict, anything else replayed as a timeline. Unreadable inputs become warnings. The
// result does not depend on the number of threads.
JobReport build_job_report(const std::vector<std::string>& inputs, const JobReportOptions& options = {});

// A recording without a verdict whose last sample (or the timeline's last write) is at most a few sampling
// intervals old is a helper still at work, not a dead one: it is marked `running` instead of incomplete,
// and its replayed verdict so far stands (provisional). Called by build_job_report with the current time.
void find_running_recordings(JobReport& report, double now);

// The hang evidence in the inputs' directories (a file input: its directory) into report.hang_files /
// report.hang; what cannot be read becomes a warning. Called by build_job_report.
void read_job_hang(JobReport& report, const std::vector<std::string>& inputs);

// Plain-language notes of a built report (idle/throttled GPUs, paused or lossy ports, stragglers), grouped
// when many nodes share one; called by build_job_report.
void write_job_notes(JobReport& report);

// The report's JSON (summary.json, `report --json`, the HTML page's data), written piece by piece to
// `sink`: the text of nlohmann's dump(indent) of the whole document, without the document or its text
// ever held whole. indent < 0: compact.
void write_job_report_json(const JobReport& report, const std::function<void(std::string_view)>& sink,
                           int indent);
// The same text in one string (small reports, tests).
std::string job_report_json_text(const JobReport& report, int indent);

// How bad a node's or the job's label is when the job view picks its worst: FAIL_RISK > SLOW > FAST >
// UNKNOWN. Not the rules' label_rank (rules/finding.h, UNKNOWN above FAST), which weighs evidence within one
// sample; here a node that measured FAST is not shown as worse than one that could not say.
inline int job_label_rank(const std::string& label) {
    if (label == kLabelFailRisk) return 3;
    if (label == kLabelSlow) return 2;
    if (label == kLabelFast) return 1;
    return 0;
}

// Slurm-style host list: gpu-node-[01-03,07],login1 (names sorted naturally, runs of numbers compressed).
std::string compress_host_list(std::vector<std::string> hosts);

}  // namespace stallscope
