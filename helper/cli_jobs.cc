// `stallscope jobs [JOBID...] [--since TIME] [--user U] [--all-users] [--all] [--json]`: the verdicts of past
// jobs, read from the AdminComment segment that the plugin writes as root (one sacct call, no load on
// slurmctld). The user-writable Comment is never read: a user could forge a FAST there.
#include <cstdio>
#include <sstream>

#include "helper/cli_args.h"
#include "helper/job_lookup.h"
#include "helper/sacct_command.h"
#include "helper/subcommands.h"
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/timeline/job_comment.h"
#include "libstallscope/util/printable.h"

namespace stallscope::cli {
namespace {

constexpr std::size_t kFields = 6;  // JobID, User, State, Elapsed, AdminComment, JobName (user text last)

struct SacctRow {
    std::vector<std::string> f;
};

std::vector<std::string> split(const std::string& line, const std::string& delimiter) {
    std::vector<std::string> out;
    std::size_t from = 0;
    for (auto at = line.find(delimiter); at != std::string::npos; at = line.find(delimiter, from)) {
        out.push_back(line.substr(from, at - from));
        from = at + delimiter.size();
    }
    out.push_back(line.substr(from));
    return out;
}

// A JobName may hold newlines and '|': with a random delimiter and the name last, a line without the
// delimiter continues the previous row's name, and no text in a name can start a row of its own.
std::vector<SacctRow> parse_rows(const std::string& output, const std::string& delimiter, int& malformed) {
    std::vector<SacctRow> rows;
    std::istringstream in(output);
    std::string line;
    while (std::getline(in, line)) {
        if (line.find(delimiter) == std::string::npos) {
            if (!rows.empty()) rows.back().f.back() += "\n" + line;
            continue;
        }
        auto fields = split(line, delimiter);
        if (fields.size() != kFields) {
            ++malformed;
            continue;
        }
        rows.push_back({std::move(fields)});
    }
    return rows;
}

}  // namespace

int run_jobs(int argc, char** argv, int first) {
    const ParsedArgs args =
        parse_args(argc, argv, first, {"since", "user", "sacct"}, {"json", "all-users", "all"});
    // `jobs 4242 4343`: those jobs' rows, however old (sacct's --jobs; no --starttime unless asked).
    std::string job_ids;
    for (const auto& id : args.positional) {
        if (!looks_like_job_id(id)) throw UsageError("'" + id + "' is not a job id (12345, 12345_7)");
        job_ids += (job_ids.empty() ? "" : ",") + id;
    }
    if (args.has("user") && args.has("all-users"))
        throw UsageError("--user and --all-users exclude each other");
    const std::string since = args.value("since").value_or("now-1days");
    check_sacct_since(since);
    const std::string delimiter = unguessable_delimiter();
    std::vector<std::string> cmd{args.value("sacct").value_or("sacct"),
                                 "--parsable2",
                                 "--delimiter=" + delimiter,
                                 "--noheader",
                                 "--allocations",
                                 "--format=JobID,User,State,Elapsed,AdminComment,JobName"};
    if (job_ids.empty() || args.has("since")) cmd.push_back("--starttime=" + since);
    if (!job_ids.empty()) cmd.push_back("--jobs=" + job_ids);
    if (args.has("all-users")) cmd.push_back("--allusers");
    if (auto u = args.value("user")) cmd.push_back("--user=" + *u);
    const SacctResult r = run_sacct(cmd, std::chrono::seconds(30));
    if (!r.ok) {
        std::fprintf(stderr, "stallscope: jobs: %s\n", printable(r.error).c_str());
        return 1;
    }
    int malformed = 0;
    const auto rows = parse_rows(r.out, delimiter, malformed);
    if (malformed)
        std::fprintf(stderr, "stallscope: jobs: %d sacct line(s) not understood, skipped\n", malformed);
    const bool json = args.has("json"), all = args.has("all");
    Json out = Json::array();
    if (!json)
        std::printf("%-12s %-14s %-16s %-10s %-10s %-9s %5s  %s\n", "JOBID", "USER", "NAME", "STATE",
                    "ELAPSED", "VERDICT", "CONF", "TOP REASON");
    for (const auto& row : rows) {
        const auto& f = row.f;
        const auto seg = parse_comment_segment(f[4]);
        if (!seg && !all) continue;
        if (json) {
            Json j{{"job_id", f[0]}, {"user", f[1]}, {"job_name", f[5]}, {"state", f[2]}, {"elapsed", f[3]}};
            j["stallscope"] = seg.has_value();
            j["label"] = seg ? Json(seg->label) : Json(nullptr);
            if (seg) {
                j["confidence"] = seg->confidence, j["top"] = seg->top, j["gpus"] = seg->gpus;
                j["duration_seconds"] = seg->duration_seconds, j["node"] = seg->node,
                j["verdict_file"] = seg->file;
                j["hang"] = seg->hang.empty() ? Json(nullptr) : Json(seg->hang);
            }
            out.push_back(std::move(j));  // nlohmann escapes control characters (\u001b)
        } else if (seg) {
            // A hang's culprit is what an on-call engineer scans the list for: after the top reason.
            const std::string reason = seg->top + (seg->hang.empty() ? "" : "  hang=" + seg->hang);
            std::printf("%-12s %-14s %-16.16s %-10.10s %-10s %-9s %5.2f  %s\n", printable(f[0]).c_str(),
                        printable(f[1]).c_str(), printable(f[5]).c_str(), printable(f[2]).c_str(),
                        printable(f[3]).c_str(), printable(seg->label).c_str(), seg->confidence,
                        printable(reason).c_str());
        } else {
            std::printf("%-12s %-14s %-16.16s %-10.10s %-10s %-9s %5s  %s\n", printable(f[0]).c_str(),
                        printable(f[1]).c_str(), printable(f[5]).c_str(), printable(f[2]).c_str(),
                        printable(f[3]).c_str(), "-", "-", "(not recorded by stallscope)");
        }
    }
    if (json) std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    return 0;
}

}  // namespace stallscope::cli
