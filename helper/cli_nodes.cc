// `stallscope nodes [--since TIME] [--partition P] [--all-users] [--min-jobs N] [--top N] [--json]`:
// which nodes keep hurting the jobs they run, from one sacct call (AdminComment segments written as
// root by the plugin; the user-writable Comment is never read). Prints drain commands, never runs them.
#include <algorithm>
#include <cstdio>
#include <regex>

#include "helper/cli_args.h"
#include "helper/node_ranking.h"
#include "helper/sacct_command.h"
#include "helper/subcommands.h"
#include "libstallscope/job/job_report.h"  // printable()
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope::cli {
namespace {

// Partition names are slurm.conf words; refusing the rest keeps sacct's argument one plain value.
void check_partition(const std::string& partition) {
    static const std::regex names(R"([A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*)");
    if (!std::regex_match(partition, names))
        throw UsageError("--partition '" + printable(partition) + "' is not a partition name (or a,b list)");
}

// Only names made of Slurm's node-name characters get a printed command: an admin pastes it into a shell.
bool shell_safe_node(const std::string& name) {
    if (name.empty() || name.size() > 64 || name[0] == '-') return false;
    for (const char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.'))
            return false;
    return true;
}

// "gpu_xid_critical 4, node_straggler 2" (most frequent first, at most `limit`).
std::vector<std::pair<std::string, std::uint32_t>> reasons_by_count(const NodeTally& t) {
    std::vector<std::pair<std::string, std::uint32_t>> out(t.reasons.begin(), t.reasons.end());
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
}

std::string reasons_text(const NodeTally& t, std::size_t limit) {
    std::string out;
    const auto sorted = reasons_by_count(t);
    for (std::size_t i = 0; i < sorted.size() && i < limit; ++i)
        out += (out.empty() ? "" : ", ") + sorted[i].first + " " + std::to_string(sorted[i].second);
    if (sorted.size() > limit) out += ", ...";
    return out;
}

std::string percent(double share) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
    return buf;
}

// The command an admin runs next: printed, never executed. Reason text from plain words only.
std::string drain_command(const NodeTally& t, const std::string& since) {
    const auto sorted = reasons_by_count(t);
    return "scontrol update NodeName=" + t.name + " State=DRAIN Reason='stallscope: named in " +
           std::to_string(t.named) + "/" + std::to_string(t.jobs) + " jobs since " + since +
           (sorted.empty() ? "" : ", mostly " + sorted.front().first) + "'";
}

Json tally_json(const NodeTally& t) {
    Json reasons = Json::object();
    for (const auto& [code, n] : reasons_by_count(t)) reasons[code] = n;
    return Json{{"node", t.name},
                {"jobs", t.jobs},
                {"named", t.named},
                {"share", t.share()},
                {"root_cause", t.root_cause},
                {"straggler", t.straggler},
                {"missing", t.missing},
                {"reasons", reasons},
                {"recent_job_ids", t.job_ids}};
}

void print_json(const NodeRanking& r, const NodeRankingOptions& o, const std::string& since) {
    Json out{{"schema", "stallscope.nodes/1"},
             {"since", since},
             {"jobs", r.rows},
             {"jobs_with_verdict", r.with_verdict},
             {"nodes_seen", r.nodes.size()},
             {"min_jobs", o.min_jobs},
             {"drain_share", o.drain_share},
             {"baseline_share", r.baseline_share()},
             {"malformed_rows", r.malformed_rows},
             {"bad_node_lists", r.bad_node_lists},
             {"named_outside_node_list", r.named_outside_list}};
    Json ranked = Json::array(), few = Json::array(), drain = Json::array();
    for (const std::size_t i : r.ranked) ranked.push_back(tally_json(r.nodes[i]));
    for (const std::size_t i : r.too_few_jobs) few.push_back(tally_json(r.nodes[i]));
    for (const std::size_t i : r.drain) {
        Json d = tally_json(r.nodes[i]);
        d["command"] =
            shell_safe_node(r.nodes[i].name) ? Json(drain_command(r.nodes[i], since)) : Json(nullptr);
        drain.push_back(std::move(d));
    }
    out["ranked"] = std::move(ranked);
    out["too_few_jobs"] = std::move(few);
    out["drain_candidates"] = std::move(drain);
    std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
}

void print_text(const NodeRanking& r, const NodeRankingOptions& o, const std::string& since,
                std::size_t top) {
    std::printf("stallscope nodes since %s: %zu jobs, %zu with a stallscope verdict, %zu nodes ran them\n",
                printable(since).c_str(), r.rows, r.with_verdict, r.nodes.size());
    std::printf("any node is named in %s of the jobs it runs (baseline); ranked: nodes with >= %d jobs\n\n",
                percent(r.baseline_share()).c_str(), o.min_jobs);
    if (r.ranked.empty()) {
        std::printf("No node with >= %d jobs was named as root cause, straggler or missing.\n", o.min_jobs);
    } else {
        std::printf("%-20s %6s %6s %6s %5s %5s %5s  %s\n", "NODE", "JOBS", "NAMED", "SHARE", "ROOT", "STRAG",
                    "MISS", "REASONS");
        for (std::size_t k = 0; k < r.ranked.size() && k < top; ++k) {
            const NodeTally& t = r.nodes[r.ranked[k]];
            std::printf("%-20s %6u %6u %6s %5u %5u %5u  %s\n", printable(t.name).c_str(), t.jobs, t.named,
                        percent(t.share()).c_str(), t.root_cause, t.straggler, t.missing,
                        printable(reasons_text(t, 3)).c_str());
        }
        if (r.ranked.size() > top)
            std::printf("(+%zu more ranked nodes named at least once: --top N or --json)\n",
                        r.ranked.size() - top);
    }
    if (!r.too_few_jobs.empty())
        std::printf("%zu node(s) named but with fewer than %d jobs, not ranked (--min-jobs N), e.g. %s\n",
                    r.too_few_jobs.size(), o.min_jobs,
                    printable(r.nodes[r.too_few_jobs.front()].name).c_str());
    std::printf("\n");
    if (r.drain.empty()) {
        std::printf("No drain candidate (named in >= %s of >= %d jobs).\n", percent(o.drain_share).c_str(),
                    o.min_jobs);
    } else {
        std::printf(
            "Drain candidates (named in >= %s of their jobs, >= %d jobs), evidence and the next step:\n",
            percent(o.drain_share).c_str(), o.min_jobs);
        constexpr std::size_t kShown = 10;
        for (std::size_t k = 0; k < r.drain.size() && k < kShown; ++k) {
            const NodeTally& t = r.nodes[r.drain[k]];
            std::string ids;
            for (const auto& id : t.job_ids) ids += (ids.empty() ? "" : ",") + id;
            std::printf("  %s: %u/%u jobs (%s), recent jobs %s\n", printable(t.name).c_str(), t.named, t.jobs,
                        printable(reasons_text(t, 3)).c_str(), printable(ids).c_str());
            if (shell_safe_node(t.name))
                std::printf("    %s\n", drain_command(t, since).c_str());
            else
                std::printf("    (no command printed: the node name has characters a shell would read)\n");
        }
        if (r.drain.size() > kShown) std::printf("  (+%zu more: --json)\n", r.drain.size() - kShown);
        std::printf(
            "Check first: `stallscope report <job dir> --node NODE` on a recent job, `scontrol show "
            "node`.\n");
    }
}

}  // namespace

int run_nodes(int argc, char** argv, int first) {
    const ParsedArgs args =
        parse_args(argc, argv, first, {"since", "partition", "sacct", "min-jobs", "drain-share", "top"},
                   {"json", "all-users"});
    if (!args.positional.empty()) throw UsageError("unexpected argument '" + args.positional.front() + "'");
    const std::string since = args.value("since").value_or("now-7days");
    check_sacct_since(since);
    NodeRankingOptions options;
    if (auto v = args.value("min-jobs")) options.min_jobs = static_cast<int>(parse_count("min-jobs", *v));
    if (auto v = args.value("drain-share")) {
        const auto share = parse_double(*v);
        if (!share || !(*share > 0 && *share <= 1))
            throw UsageError("--drain-share must be a share of jobs in (0, 1], e.g. 0.5, got '" +
                             printable(*v) + "'");
        options.drain_share = *share;
    }
    std::size_t top = 20;
    if (auto v = args.value("top")) top = static_cast<std::size_t>(parse_count("top", *v));
    const std::string delimiter = unguessable_delimiter();
    std::vector<std::string> cmd{args.value("sacct").value_or("sacct"),
                                 "--parsable2",
                                 "--delimiter=" + delimiter,
                                 "--noheader",
                                 "--allocations",
                                 std::string("--format=") + kNodesSacctFormat,
                                 "--starttime=" + since};
    if (args.has("all-users")) cmd.push_back("--allusers");
    if (auto p = args.value("partition")) {
        check_partition(*p);
        cmd.push_back("--partition=" + *p);
    }
    // 100 000 jobs are ~15 MB of output; the default 64 MiB cap and a minute bound one call.
    const SacctResult result = run_sacct(cmd, std::chrono::seconds(60));
    if (!result.ok) {
        std::fprintf(stderr, "stallscope: nodes: %s\n", printable(result.error).c_str());
        return 1;
    }
    NodeRanker ranker(options);
    read_sacct_nodes_output(result.out, delimiter, ranker);
    const NodeRanking ranking = ranker.finish();
    if (ranking.malformed_rows)
        std::fprintf(stderr, "stallscope: nodes: %zu sacct line(s) not understood, skipped\n",
                     ranking.malformed_rows);
    if (ranking.bad_node_lists)
        std::fprintf(stderr,
                     "stallscope: nodes: %zu job(s) with a NodeList that is not Slurm's syntax, skipped "
                     "(first: '%s')\n",
                     ranking.bad_node_lists, printable(ranking.first_bad_node_list).c_str());
    if (ranking.named_outside_list)
        std::fprintf(stderr,
                     "stallscope: nodes: %zu name(s) in comments that the job did not run on, ignored\n",
                     ranking.named_outside_list);
    if (args.has("json"))
        print_json(ranking, options, since);
    else
        print_text(ranking, options, since, top);
    return 0;
}

}  // namespace stallscope::cli
