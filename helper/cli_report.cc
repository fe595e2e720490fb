// `stallscope report DIR|FILE... [--json] [--all] [--node HOST] [--top N]` and `stallscope summarize DIR`
// (writes DIR/summary.json and DIR/summary.txt; the same merge and renderer).
#include <cstdio>

#include "helper/cli_args.h"
#include "helper/html_report.h"
#include "helper/job_report.h"
#include "helper/subcommands.h"
#include "libstallscope/util/atomic_file.h"

namespace stallscope::cli {
namespace {

constexpr const char* kReportHelp =
    R"(usage: stallscope report DIR|FILE... [--json] [--all] [--node HOST] [--top N] [--html FILE]

Merges a job's recordings into one verdict and prints what an admin reads first.
DIR is a job's output directory (stallscope-<jobid>/): its verdict.<step>.<host>.json files are read
(one small file per node and step); a node's timeline is replayed only when its verdict is missing,
and that node is named `recording_incomplete`. FILE can also be timeline.*.jsonl or verdict.*.json.

The default view fits a screen at any job size:
  - the job verdict, worst node and port, durations per step;
  - reasons, root cause first, identical ones on many nodes grouped
    ("212 nodes: fabric_packet_loss on mlx5_3/1 [FAIL_RISK]: gpu-node-[0002,0005-0010]");
  - every straggler node (GPUs below 70 % of the step's median node) and every node without a verdict;
  - the distribution of per-node GPU utilization (min/p10/median/p90/max and a histogram);
  - the worst nodes (label, then missing verdict, then lowest GPU utilization).

options:
  --node HOST  one node in full: its verdicts with every reason and evidence, per-GPU and per-port tables
  --all        every node row, every reason ungrouped, every GPU and port (long on big jobs)
  --top N      node rows in the default view (default 10)
  --html FILE  also write the report as one self-contained HTML page (charts, sortable tables)
  --json       the full merged data (what summary.json holds)
Values that were not measured print as '-', never 0.

examples:
  stallscope report /shared/stallscope-4242
  stallscope report /shared/stallscope-4242 --node gpu-node-0007
  stallscope report /shared/stallscope-4242 --json | jq '.straggler_nodes'
)";

}  // namespace

int run_report(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {"node", "top", "html"}, {"json", "all", "help"});
    if (args.has("help")) {
        std::fputs(kReportHelp, stdout);
        return 0;
    }
    if (args.positional.empty())
        throw UsageError(
            "report needs a stallscope-<jobid> directory or timeline/verdict files (see report --help)");
    ReportView view;
    view.all = args.has("all");
    if (auto node = args.value("node")) view.node = *node;
    if (auto top = args.value("top")) view.top_nodes = static_cast<std::size_t>(parse_count("top", *top));
    const JobReport report = build_job_report(args.positional);
    if (report.nodes.empty()) {
        for (const auto& w : report.warnings) std::fprintf(stderr, "stallscope: %s\n", printable(w).c_str());
        std::fprintf(stderr, "stallscope: report: no readable verdict or timeline\n");
        return 1;
    }
    if (auto html = args.value("html")) {
        std::string error;
        if (!write_html_report(report, args.positional, *html, error)) {
            std::fprintf(stderr, "stallscope: report: %s\n", printable(error).c_str());
            return 1;
        }
    }
    if (args.has("json")) {
        std::printf("%s\n",
                    job_report_json(report).dump(2, ' ', false, Json::error_handler_t::replace).c_str());
        return 0;
    }
    const std::string text = job_report_text(report, view);
    if (text.empty()) {
        std::fprintf(stderr, "stallscope: report: no recording of host %s in this job\n",
                     printable(view.node).c_str());
        return 1;
    }
    std::fputs(text.c_str(), stdout);
    return 0;
}

int run_summarize(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {}, {});
    if (args.positional.size() != 1) throw UsageError("summarize needs exactly one directory");
    const std::string dir = args.positional.front();
    const JobReport report = build_job_report({dir});
    if (report.nodes.empty()) {
        std::fprintf(stderr, "stallscope: summarize: no verdict or timeline in %s\n", printable(dir).c_str());
        return 0;  // nothing recorded (e.g. the step was too short to start): not an error for the epilog
    }
    std::string error;
    bool ok = write_file_atomically(
        dir + "/summary.json",
        job_report_json(report).dump(2, ' ', false, Json::error_handler_t::replace) + "\n", true, error);
    ok = ok && write_file_atomically(dir + "/summary.txt", job_report_text(report), true, error);
    if (!ok) {
        std::fprintf(stderr, "stallscope: summarize: %s\n", error.c_str());
        return 1;
    }
    return 0;
}

}  // namespace stallscope::cli
