#include "helper/job_lookup.h"

#include <sys/stat.h>

#include <cstdio>
#include <regex>
#include <stdexcept>
#include <vector>

#include "helper/cli_args.h"
#include "helper/sacct_command.h"
#include "libstallscope/timeline/job_comment.h"
#include "libstallscope/util/printable.h"

namespace stallscope::cli {
namespace {

std::string parent_of(const std::string& file) {
    const auto slash = file.rfind('/');
    return slash == std::string::npos ? "." : file.substr(0, slash == 0 ? 1 : slash);
}

struct SacctFields {
    std::string admin_comment, work_dir;
};

// AdminComment first, WorkDir (a path the user chose: any byte but the random delimiter) after it. A het
// job prints one row per component; the first row is the job's.
SacctFields split_first_row(const std::string& out, const std::string& delimiter) {
    SacctFields f;
    const auto at = out.find(delimiter);
    if (at == std::string::npos) return f;
    f.admin_comment = out.substr(0, at);
    std::string rest = out.substr(at + delimiter.size());
    if (const auto next = rest.find(delimiter); next != std::string::npos) {
        const auto row_end = rest.rfind('\n', next);
        rest = rest.substr(0, row_end == std::string::npos ? 0 : row_end);
    }
    while (!rest.empty() && rest.back() == '\n') rest.pop_back();
    f.work_dir = rest;
    return f;
}

void say_reading(const std::string& command, const std::string& id, const std::string& dir, const char* why) {
    std::fprintf(stderr, "stallscope: %s: job %s: reading %s (%s)\n", command.c_str(), printable(id).c_str(),
                 printable(dir).c_str(), why);
}

}  // namespace

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool looks_like_job_id(const std::string& text) {
    static const std::regex job_id(R"(\d+([_+]\d+)?)");
    return std::regex_match(text, job_id);
}

std::string find_job_directory(const std::string& id, const std::string& sacct, const std::string& command) {
    std::vector<std::string> tried;
    const std::string delimiter = unguessable_delimiter();
    const SacctResult r = run_sacct({sacct, "--parsable2", "--delimiter=" + delimiter, "--noheader",
                                     "--allocations", "--format=AdminComment,WorkDir", "--jobs=" + id},
                                    std::chrono::seconds(30));
    if (!r.ok) {
        tried.push_back("sacct (" + r.error + ")");
    } else if (r.out.find(delimiter) == std::string::npos) {
        tried.push_back("sacct (it knows no job " + id + ")");
    } else {
        const SacctFields f = split_first_row(r.out, delimiter);
        const auto seg = parse_comment_segment(f.admin_comment);
        if (!seg) {
            tried.push_back("the AdminComment (no stallscope segment)");
        } else if (seg->file.empty()) {
            tried.push_back("the AdminComment (its segment names no verdict file: comment too long)");
        } else {
            // file= names summary.json or a verdict file, or the job directory itself (what `report
            // --comment` and the slurmctld epilog write when there is no summary).
            const std::string dir = is_directory(seg->file) ? seg->file : parent_of(seg->file);
            if (is_directory(dir)) {
                say_reading(command, id, dir, "the directory its AdminComment names");
                return dir;
            }
            tried.push_back("the AdminComment's file=" + seg->file + " (no such directory here)");
        }
        if (f.work_dir.empty()) {
            tried.push_back("WorkDir (sacct gave none)");
        } else {
            const std::string dir = f.work_dir + "/stallscope-" + id;
            if (is_directory(dir)) {
                say_reading(command, id, dir, "stallscope-<jobid> in the job's WorkDir");
                return dir;
            }
            tried.push_back(dir + " (WorkDir; no such directory, yet?)");
        }
    }
    const std::string here = "stallscope-" + id;
    if (is_directory(here)) {
        say_reading(command, id, "./" + here, "in the current directory");
        return here;
    }
    tried.push_back("./" + here);
    std::string list;
    for (const auto& t : tried) list += (list.empty() ? "" : "; ") + t;
    throw std::runtime_error(command + ": job " + id + ": no stallscope directory found (tried " + list +
                             ")");
}

std::string resolve_view_input(const std::string& input, const std::string& sacct,
                               const std::string& command) {
    if (input.rfind("job:", 0) == 0) {
        const std::string id = input.substr(4);
        if (!looks_like_job_id(id))
            throw UsageError(command + ": " + input + ": not a job id (job:12345, job:12345_7)");
        return find_job_directory(id, sacct, command);
    }
    struct stat st {};
    const bool exists = ::stat(input.c_str(), &st) == 0;
    const bool id_shaped = looks_like_job_id(input);
    // A path named like a job id (./12345 in a shared directory) wins, as it always did, but never
    // silently: stderr says so and how to ask for the job.
    if (exists && id_shaped)
        std::fprintf(stderr,
                     "stallscope: %s: %s is a path here; reading the path, not job %s (write job:%s "
                     "for the job)\n",
                     command.c_str(), printable(input).c_str(), printable(input).c_str(),
                     printable(input).c_str());
    if (exists || !id_shaped) return input;
    return find_job_directory(input, sacct, command);
}

}  // namespace stallscope::cli
