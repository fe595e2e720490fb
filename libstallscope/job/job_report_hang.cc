// The job merge's side of the hang evidence: which rank the job waited for, read once per job from the
// few evidence files next to the recordings (libstallscope/hang/hang_merge.h), for summary.json/.txt, the
// comment, `report` and the HTML page.
#include <sys/stat.h>

#include <algorithm>

#include "libstallscope/hang/hang_merge.h"
#include "libstallscope/job/job_report.h"

namespace stallscope {

void read_job_hang(JobReport& report, const std::vector<std::string>& inputs) {
    std::vector<std::string> dirs;
    for (const auto& input : inputs) {
        struct stat st {};
        if (::stat(input.c_str(), &st) != 0) continue;  // find_recordings already warned
        std::string dir = input;
        if (!S_ISDIR(st.st_mode)) {
            // A timeline or verdict named on the command line: the evidence lies next to it.
            const auto slash = input.rfind('/');
            dir = slash == std::string::npos ? "." : slash == 0 ? "/" : input.substr(0, slash);
        }
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    }
    if (dirs.empty()) return;
    JobHangEvidence hang = read_job_hang_evidence(dirs);
    for (auto& w : hang.warnings) report.warnings.push_back("hang evidence: " + std::move(w));
    report.hang_files = std::move(hang.files);
    if (!report.hang_files.empty()) report.hang = std::move(hang.finding);
}

}  // namespace stallscope
