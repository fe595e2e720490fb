// `stallscope compare A B [--json] [--html FILE]`: A and B are timelines, stallscope-<jobid> directories
// or job ids (the directory of the verdict file named in the job's AdminComment, via one sacct call).
#include <sys/stat.h>

#include <cstdio>
#include <regex>

#include "helper/cli_args.h"
#include "helper/compare_jobs.h"
#include "helper/sacct_command.h"
#include "helper/subcommands.h"
#include "libstallscope/timeline/job_comment.h"
#include "libstallscope/util/atomic_file.h"

namespace stallscope::cli {
namespace {

// A path as given; a job id (digits, array/het suffixes) when no such path exists.
std::string resolve_input(const std::string& input, const std::string& sacct) {
    struct stat st {};
    if (::stat(input.c_str(), &st) == 0) return input;
    static const std::regex job_id(R"(\d+([_+]\d+)?)");
    if (!std::regex_match(input, job_id))
        throw std::runtime_error("compare: " + input + ": no such file, directory or job id");
    const std::string delimiter = unguessable_delimiter();
    const SacctResult r = run_sacct({sacct, "--parsable2", "--delimiter=" + delimiter, "--noheader",
                                     "--allocations", "--format=AdminComment", "--jobs=" + input},
                                    std::chrono::seconds(30));
    if (!r.ok) throw std::runtime_error("compare: job " + input + ": " + r.error);
    const auto seg = parse_comment_segment(r.out);
    if (!seg)
        throw std::runtime_error("compare: job " + input + " has no stallscope segment in its AdminComment");
    if (seg->file.empty())
        throw std::runtime_error("compare: job " + input +
                                 ": its AdminComment names no verdict file (comment too long)");
    const auto slash = seg->file.rfind('/');
    return slash == std::string::npos ? "." : seg->file.substr(0, slash == 0 ? 1 : slash);
}

JobSide load_side(const std::string& input, const std::string& sacct) {
    JobSide side;
    side.input = input;
    side.report = build_job_report({resolve_input(input, sacct)});
    if (side.report.nodes.empty()) {
        for (const auto& w : side.report.warnings) std::fprintf(stderr, "stallscope: %s\n", w.c_str());
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
            std::fprintf(stderr, "stallscope: compare: %s\n", error.c_str());
            return 1;
        }
    }
    if (args.has("json"))
        std::printf("%s\n", comparison_json(c).dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    else
        std::fputs(comparison_text(c).c_str(), stdout);
    return 0;
}

}  // namespace stallscope::cli
