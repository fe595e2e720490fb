// `stallscope report DIR|TIMELINE... [--json]` and `stallscope summarize DIR` (run by the epilog as the
// job user: writes DIR/summary.json and DIR/summary.txt).
#include <cstdio>

#include "helper/cli_args.h"
#include "helper/job_report.h"
#include "helper/subcommands.h"
#include "libstallscope/util/atomic_file.h"

namespace stallscope::cli {

int run_report(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {}, {"json"});
    if (args.positional.empty())
        throw UsageError("report needs a stallscope-<jobid> directory or timeline files");
    const JobReport report = build_job_report(args.positional);
    if (report.nodes.empty()) {
        for (const auto& w : report.warnings) std::fprintf(stderr, "stallscope: %s\n", w.c_str());
        std::fprintf(stderr, "stallscope: report: no readable timeline\n");
        return 1;
    }
    if (args.has("json"))
        std::printf("%s\n", job_report_json(report).dump(2).c_str());
    else
        std::fputs(job_report_text(report).c_str(), stdout);
    return 0;
}

int run_summarize(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {}, {});
    if (args.positional.size() != 1) throw UsageError("summarize needs exactly one directory");
    const std::string dir = args.positional.front();
    const JobReport report = build_job_report({dir});
    if (report.nodes.empty()) {
        std::fprintf(stderr, "stallscope: summarize: no timeline in %s\n", dir.c_str());
        return 0;  // nothing recorded (e.g. the step was too short to start): not an error for the epilog
    }
    std::string error;
    bool ok =
        write_file_atomically(dir + "/summary.json", job_report_json(report).dump(2) + "\n", true, error);
    ok = ok && write_file_atomically(dir + "/summary.txt", job_report_text(report), true, error);
    if (!ok) {
        std::fprintf(stderr, "stallscope: summarize: %s\n", error.c_str());
        return 1;
    }
    return 0;
}

}  // namespace stallscope::cli
