// `stallscope compare A B [--json] [--html FILE]`: A and B are timelines, stallscope-<jobid> directories
// or job ids, `job:<id>` or a bare id that names no path (the directory of the verdict file named in the
// job's AdminComment, via one sacct call).
#include <sys/stat.h>

#include <cstdio>
#include <regex>

#include "helper/cli_args.h"
#include "helper/compare_jobs.h"
#include "helper/sacct_command.h"
#include "helper/subcommands.h"
#include "libstallscope/timeline/job_comment.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/printable.h"

namespace stallscope::cli {
namespace {

// The directory of job `id`'s verdict file, from its AdminComment (one sacct call). The `file=` path
// there was written by the job's helper, i.e. chosen by the job: it is read as whoever runs compare, so
// which directory was used is always said on stderr.
std::string job_directory(const std::string& id, const std::string& sacct) {
    const std::string delimiter = unguessable_delimiter();
    const SacctResult r = run_sacct({sacct, "--parsable2", "--delimiter=" + delimiter, "--noheader",
                                     "--allocations", "--format=AdminComment", "--jobs=" + id},
                                    std::chrono::seconds(30));
    if (!r.ok) throw std::runtime_error("compare: job " + id + ": " + r.error);
    const auto seg = parse_comment_segment(r.out);
    if (!seg)
        throw std::runtime_error("compare: job " + id + " has no stallscope segment in its AdminComment");
    if (seg->file.empty())
        throw std::runtime_error("compare: job " + id +
                                 ": its AdminComment names no verdict file (comment too long)");
    // file= names summary.json or a verdict file, or the job directory itself (what `report --comment`
    // and the slurmctld epilog write when there is no summary): a directory is the job's, not its parent.
    struct stat named {};
    const bool is_dir = ::stat(seg->file.c_str(), &named) == 0 && S_ISDIR(named.st_mode);
    const auto slash = seg->file.rfind('/');
    const std::string dir = is_dir                       ? seg->file
                            : slash == std::string::npos ? "."
                                                         : seg->file.substr(0, slash == 0 ? 1 : slash);
    std::fprintf(stderr, "stallscope: compare: job %s: reading %s (the directory its AdminComment names)\n",
                 printable(id).c_str(), printable(dir).c_str());
    return dir;
}

// `job:<id>` is always a job id; anything else is a path when one exists, else a job id (digits,
// array/het suffixes). A path named like a job id (./12345 in a shared directory) still wins, as it
// always did, but never silently: stderr says so and how to ask for the job.
std::string resolve_input(const std::string& input, const std::string& sacct) {
    static const std::regex job_id(R"(\d+([_+]\d+)?)");
    if (input.rfind("job:", 0) == 0) {
        const std::string id = input.substr(4);
        if (!std::regex_match(id, job_id))
            throw UsageError("compare: " + input + ": not a job id (job:12345, job:12345_7)");
        return job_directory(id, sacct);
    }
    struct stat st {};
    const bool exists = ::stat(input.c_str(), &st) == 0;
    const bool id_shaped = std::regex_match(input, job_id);
    if (exists && id_shaped)
        std::fprintf(stderr,
                     "stallscope: compare: %s is a path here; reading the path, not job %s (write job:%s "
                     "for the job)\n",
                     printable(input).c_str(), printable(input).c_str(), printable(input).c_str());
    if (exists) return input;
    if (!id_shaped) throw std::runtime_error("compare: " + input + ": no such file, directory or job id");
    return job_directory(input, sacct);
}

JobSide load_side(const std::string& input, const std::string& sacct) {
    JobSide side;
    side.input = input;
    side.report = build_job_report({resolve_input(input, sacct)});
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
