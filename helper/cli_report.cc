// `stallscope report JOBID|DIR|FILE... [--json] [--all] [--node HOST] [--top N]` and `stallscope summarize
// DIR` (writes DIR/summary.json and DIR/summary.txt; the same merge and renderer).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "helper/cli_args.h"
#include "helper/html_report.h"
#include "helper/job_lookup.h"
#include "helper/job_report_text.h"
#include "helper/progress_bar.h"
#include "helper/subcommands.h"
#include "helper/thresholds_option.h"
#include "libstallscope/job/job_finish.h"
#include "libstallscope/job/job_report.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope::cli {
namespace {

// `report --comment`: the job's comment segment as the job's writer composes it (job_finish.h), for
// whoever writes the comment after the job (contrib/slurm/slurmctld-epilog.sh: the plugin cannot update
// a job that scancel or its time limit ended). Read-only; file= names summary.json when there is one.
// missing= is the report's missing_nodes: a timeline that ends with its verdict line is not missing
// because no verdict.json sits beside it, and a helper still recording is not missing at all.
int print_comment_segment(const JobReport& report, const std::vector<std::string>& inputs) {
    std::string file;
    for (const std::string& input : inputs)
        if (file.empty() && is_directory(input))
            file = ::access((input + "/summary.json").c_str(), R_OK) == 0 ? input + "/summary.json" : input;
    const JobCommentFacts facts = job_comment_facts(report, {}, file);
    std::printf("%s\n", compose_job_comment_segment(facts).c_str());
    return 0;
}

}  // namespace

int run_report(int argc, char** argv, int first) {
    std::set<std::string> with_value = {"node", "top", "rules", "jobs", "sacct"};
    with_value.insert(kOutputFileOptions.begin(), kOutputFileOptions.end());
    const ParsedArgs args = parse_args(argc, argv, first, with_value, {"json", "all", "comment", "ended"});
    const auto html = output_file_option(args);
    if (args.positional.empty())
        throw UsageError(
            "report needs a stallscope-<jobid> directory or timeline/verdict files (see report --help)");
    if (args.has("comment") && (args.has("json") || html || args.has("node") || args.has("all")))
        throw UsageError(
            "--comment prints only the job's comment segment: drop --json, --html, --node, --all");
    // `report 4242` as `seff 4242`: a job id that names no path is looked up (job_lookup.h).
    std::vector<std::string> inputs;
    for (const auto& input : args.positional)
        inputs.push_back(resolve_view_input(input, args.value("sacct").value_or("sacct"), "report"));
    ReportView view;
    view.all = args.has("all");
    if (auto node = args.value("node")) view.node = *node;
    if (auto top = args.value("top")) view.top_nodes = static_cast<std::size_t>(parse_count("top", *top));
    JobReportOptions options;
    if (args.has("rules")) options.rules = thresholds_from_option(args.value("rules"));
    // --ended: the caller knows the job is over (contrib/slurm/slurmctld-epilog.sh runs after it). A
    // timeline without a verdict is then a helper that died, however recent its last sample (a SIGKILL
    // at the end of the job leaves one seconds old), never a step still running.
    options.job_ended = args.has("ended");
    if (auto jobs = args.value("jobs")) {
        const auto n = parse_u64(*jobs);
        if (!n || *n < 1 || *n > 1024) throw UsageError("--jobs must be a number of threads (1-1024)");
        options.threads = static_cast<unsigned>(*n);
    }
    // On a terminal, a progress line while recordings load (a job without verdicts, or --rules, replays
    // every timeline: minutes for a big or long job); erased before anything else is printed.
    ProgressBar bar("recordings");
    if (bar.active()) options.progress = progress_drawer(bar);
    const JobReport report = build_job_report(inputs, options);
    bar.clear();
    if (report.nodes.empty()) {
        for (const auto& w : report.warnings) std::fprintf(stderr, "stallscope: %s\n", printable(w).c_str());
        std::fprintf(stderr, "stallscope: report: no readable verdict or timeline\n");
        return 1;
    }
    if (args.has("comment")) {
        // What was refused (an oversized or nested verdict, a directory over its caps) is named on
        // stderr; stdout keeps the one segment line the slurmctld epilog reads.
        for (const auto& w : report.warnings) std::fprintf(stderr, "stallscope: %s\n", printable(w).c_str());
        return print_comment_segment(report, inputs);
    }
    if (html) {
        std::string error;
        ProgressBar charting("timelines charted");
        const bool written = write_html_report(
            report, inputs, *html, error, charting.active() ? progress_drawer(charting) : SeriesProgress{});
        charting.clear();
        if (!written) {
            std::fprintf(stderr, "stallscope: report: %s\n", printable(error).c_str());
            return 1;
        }
    }
    if (args.has("json")) {
        write_job_report_json(
            report, [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); }, 2);
        std::fputs("\n", stdout);
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
    JobReportOptions ended;
    ended.job_ended = true;  // run by the epilog: every step of the job is over
    const JobReport report = build_job_report({dir}, ended);
    if (report.nodes.empty()) {
        std::fprintf(stderr, "stallscope: summarize: no verdict or timeline in %s\n", printable(dir).c_str());
        return 0;  // nothing recorded (e.g. the step was too short to start): not an error for the epilog
    }
    std::string error;
    if (!write_job_summary(dir, report, job_summary_text, error)) {
        std::fprintf(stderr, "stallscope: summarize: %s\n", printable(error).c_str());
        return 1;
    }
    return 0;
}

}  // namespace stallscope::cli
