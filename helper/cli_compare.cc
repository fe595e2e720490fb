// `stallscope compare A B [--json] [--html FILE]`: A and B are timelines, stallscope-<jobid> directories
// or job ids, `job:<id>` or a bare id that names no path (job_lookup.h).
#include <sys/stat.h>

#include <cstdio>

#include "helper/cli_args.h"
#include "helper/compare_view.h"
#include "helper/job_lookup.h"
#include "helper/subcommands.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/printable.h"

namespace stallscope::cli {
namespace {

JobSide load_side(const std::string& input, const std::string& sacct) {
    JobSide side;
    side.input = input;
    const std::string path = resolve_view_input(input, sacct, "compare");
    struct stat st {};
    if (path == input && ::stat(path.c_str(), &st) != 0)
        throw std::runtime_error("compare: " + input + ": no such file, directory or job id");
    side.report = build_job_report({path});
    if (side.report.nodes.empty()) {
        for (const auto& w : side.report.warnings)
            std::fprintf(stderr, "stallscope: %s\n", printable(w).c_str());
        throw std::runtime_error("compare: " + input + ": no readable timeline");
    }
    return side;
}

}  // namespace

int run_compare(int argc, char** argv, int first) {
    std::set<std::string> with_value = {"sacct"};
    with_value.insert(kOutputFileOptions.begin(), kOutputFileOptions.end());
    const ParsedArgs args = parse_args(argc, argv, first, with_value, {"json"});
    if (args.positional.size() != 2)
        throw UsageError("compare needs exactly two inputs: A B (timelines, job directories or job ids)");
    const std::string sacct = args.value("sacct").value_or("sacct");
    const auto html = output_file_option(args);
    const Comparison c =
        compare_jobs(load_side(args.positional[0], sacct), load_side(args.positional[1], sacct));
    if (html) {
        std::string error;
        if (!write_file_atomically(*html, comparison_html(c), false, error)) {
            std::fprintf(stderr, "stallscope: compare: %s\n", printable(error).c_str());
            return 1;
        }
    }
    if (args.has("json"))
        std::printf("%s\n", comparison_json(c).dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    else
        std::fputs(printable_lines(comparison_text(c)).c_str(), stdout);
    return 0;
}

}  // namespace stallscope::cli
