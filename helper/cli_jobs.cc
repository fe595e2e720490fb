// `stallscope jobs [--since TIME] [--user U] [--all-users] [--json]`: the verdicts of past jobs, read
// from the job comment segment that the plugin writes (one sacct call, no load on slurmctld).
#include <cstdio>
#include <sstream>

#include "helper/cli_args.h"
#include "helper/subcommands.h"
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/sources/nvidia_smi/bounded_command.h"
#include "libstallscope/timeline/job_comment.h"

namespace stallscope::cli {
namespace {

std::vector<std::string> split(const std::string& line, char sep) {
    std::vector<std::string> out;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, sep)) out.push_back(field);
    if (!line.empty() && line.back() == sep) out.emplace_back();
    return out;
}

}  // namespace

int run_jobs(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {"since", "user", "sacct"}, {"json", "all-users"});
    std::vector<std::string> cmd{args.value("sacct").value_or("sacct"),
                                 "--parsable2",
                                 "--noheader",
                                 "--allocations",
                                 "--format=JobID,User,JobName,State,Elapsed,AdminComment,Comment",
                                 "--starttime=" + args.value("since").value_or("now-1days")};
    if (args.has("all-users")) cmd.push_back("--allusers");
    if (auto u = args.value("user")) cmd.push_back("--user=" + *u);
    const CommandResult r = run_bounded_command(cmd, std::chrono::seconds(30), 64u << 20);
    if (!r.ok()) {
        std::fprintf(stderr, "stallscope: jobs: %s failed: %s\n", cmd[0].c_str(),
                     r.error.empty() ? ("exit " + std::to_string(r.exit_status)).c_str() : r.error.c_str());
        return 1;
    }
    Json rows = Json::array();
    std::istringstream lines(r.output);
    std::string line;
    if (!args.has("json"))
        std::printf("%-12s %-14s %-16s %-10s %-10s %-9s %5s  %s\n", "JOBID", "USER", "NAME", "STATE",
                    "ELAPSED", "VERDICT", "CONF", "TOP REASON");
    while (std::getline(lines, line)) {
        const auto f = split(line, '|');
        if (f.size() < 7) continue;
        // Our segment may be in AdminComment (default) or Comment (comment=user in plugstack.conf).
        auto seg = parse_comment_segment(f[5]);
        if (!seg) seg = parse_comment_segment(f[6]);
        if (!seg) continue;
        if (args.has("json")) {
            rows.push_back(Json{{"job_id", f[0]},
                                {"user", f[1]},
                                {"job_name", f[2]},
                                {"state", f[3]},
                                {"elapsed", f[4]},
                                {"label", seg->label},
                                {"confidence", seg->confidence},
                                {"top", seg->top},
                                {"gpus", seg->gpus},
                                {"duration_seconds", seg->duration_seconds},
                                {"node", seg->node},
                                {"verdict_file", seg->file}});
        } else {
            std::printf("%-12s %-14s %-16.16s %-10.10s %-10s %-9s %5.2f  %s\n", f[0].c_str(), f[1].c_str(),
                        f[2].c_str(), f[3].c_str(), f[4].c_str(), seg->label.c_str(), seg->confidence,
                        seg->top.c_str());
        }
    }
    if (args.has("json")) std::printf("%s\n", rows.dump(2).c_str());
    return 0;
}

}  // namespace stallscope::cli
