#include "libstallscope/job/job_finish.h"

#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <memory>
#include <set>

#include "libstallscope/job/job_files.h"
#include "libstallscope/model/profile.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/monotonic_clock.h"

namespace stallscope {

namespace {

constexpr double kPollSeconds = 0.1;

// A plain nanosleep: the stop path runs after SIGTERM, when sleep_until returns at once.
void pause_seconds(double seconds) {
    timespec ts{static_cast<time_t>(seconds),
                static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
    ::nanosleep(&ts, nullptr);
}

// "host" or "host:subject" (merged reasons carry their node in front of the subject).
std::string host_of_subject(const std::string& subject, const std::set<std::string>& hosts) {
    const std::string host = subject.substr(0, subject.find(':'));
    return hosts.count(host) ? host : "";
}

}  // namespace

std::vector<std::string> hosts_without_verdict(const std::string& dir) {
    std::set<std::string> timelines, verdicts;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return {};
    std::size_t entries = 0;
    // Bounded like find_recordings: the job can put any number of names here.
    while (const dirent* e = ::readdir(d.get())) {
        if (++entries > kMaxDirectoryEntries) break;
        const std::string name = e->d_name;
        if (name.starts_with("timeline.") && name.ends_with(".jsonl"))  // v1
            timelines.insert(name.substr(9, name.size() - 9 - 6));
        else if (name.starts_with("timeline.") && name.ends_with(".jsonl.zst"))  // v2
            timelines.insert(name.substr(9, name.size() - 9 - 10));
        else if (name.starts_with("verdict.") && name.ends_with(".json"))
            verdicts.insert(name.substr(8, name.size() - 8 - 5));
    }
    std::set<std::string> hosts;
    for (const std::string& stem : timelines)
        if (!verdicts.count(stem)) {
            const auto dot = stem.find('.');  // "<step>.<host>"
            hosts.insert(dot == std::string::npos ? stem : stem.substr(dot + 1));
        }
    return {hosts.begin(), hosts.end()};
}

std::vector<std::string> wait_for_verdicts(const std::string& dir, double wait_seconds) {
    const double deadline = monotonic_now() + wait_seconds;
    for (;;) {
        std::vector<std::string> missing = hosts_without_verdict(dir);
        if (missing.empty() || monotonic_now() + kPollSeconds > deadline) return missing;
        pause_seconds(kPollSeconds);
    }
}

bool write_job_summary(const std::string& dir, const JobReport& report, const JobSummaryText& summary_text,
                       std::string& error) {
    // Streamed into the file: a big job's summary.json is never held whole (job_report.h).
    return write_file_atomically(
               dir + "/summary.json",
               [&](const AtomicWrite& write) {
                   write_job_report_json(report, write, 2);
                   write("\n");
               },
               true, error) &&
           write_file_atomically(dir + "/summary.txt", summary_text(report), true, error);
}

JobCommentFacts job_comment_facts(const JobReport& report, const std::vector<std::string>& missing,
                                  const std::string& summary_path) {
    JobCommentFacts f;
    const StepVerdict& v = report.verdict;
    f.label = v.label;
    f.confidence = v.confidence;
    f.duration_seconds = v.duration_seconds();
    std::set<std::string> hosts;
    for (const auto& n : report.nodes)
        if (!n.host.empty()) hosts.insert(n.host);
    for (const auto& h : missing) hosts.insert(h);
    f.nodes = static_cast<int>(hosts.size());
    // Missing: no verdict after the wait, or a recording the merge found incomplete (no verdict line).
    std::set<std::string> missing_hosts(missing.begin(), missing.end());
    missing_hosts.insert(report.missing_nodes.begin(), report.missing_nodes.end());
    f.missing.assign(missing_hosts.begin(), missing_hosts.end());
    // The root cause: the first (earliest) reason pushing towards the job's label; a straggler is
    // named in stragglers= instead unless nothing else explains the label.
    const ReasonSummary* top = nullptr;
    for (const bool allow_straggler : {false, true}) {
        for (const auto& r : v.reasons)
            if (job_label_rank(r.reason.label) == job_label_rank(v.label) &&
                (allow_straggler || r.reason.code != "node_straggler")) {
                top = &r;
                break;
            }
        if (top) break;
    }
    if (!top && !v.reasons.empty()) top = &v.reasons.front();
    if (top)
        f.top = top->reason.code + (top->reason.subject.empty() ? "" : ":" + top->reason.subject);
    else if (!v.unknown_reasons.empty())
        f.top = v.unknown_reasons.front();
    f.node = top ? host_of_subject(top->reason.subject, hosts) : "";
    if (f.node.empty()) f.node = report.worst_node;
    std::set<std::string> stragglers;
    for (const auto& r : v.reasons)
        if (r.reason.code == "node_straggler") {
            const std::string host = host_of_subject(r.reason.subject, hosts);
            if (!host.empty()) stragglers.insert(host);
        }
    if (!report.straggler_node.empty()) stragglers.insert(report.straggler_node);
    stragglers.insert(report.straggler_nodes.begin(), report.straggler_nodes.end());
    f.stragglers.assign(stragglers.begin(), stragglers.end());
    f.gpus_measured = static_cast<int>(report.gpus.size());
    f.file = summary_path;
    if (!report.hang_files.empty()) {
        f.hang_kind = to_string(report.hang.kind);
        f.hang_rank = report.hang.rank;
        f.hang_host = report.hang.host;
        f.hang_gpu = report.hang.gpu;
    }
    return f;
}

JobFinish finish_job(const std::string& dir, double merge_wait_seconds, int allocated_gpus_per_node,
                     const JobSummaryText& summary_text) {
    JobFinish out;
    const std::vector<std::string> missing = wait_for_verdicts(dir, merge_wait_seconds);
    JobReportOptions ended;
    ended.job_ended = true;  // this step has ended; a verdict-less timeline now is a helper that died
    const JobReport report = build_job_report({dir}, ended);
    if (report.nodes.empty()) {
        out.warnings.push_back("job merge: no readable timeline in " + dir);
        return out;
    }
    std::string error;
    std::string summary = dir + "/summary.json";
    if (!write_job_summary(dir, report, summary_text, error)) {
        out.warnings.push_back("job summary: " + error);
        summary.clear();
    }
    JobCommentFacts facts = job_comment_facts(report, missing, summary);
    // Allocated GPUs are only known per node (the Slurm variables of this helper's step); a job-level
    // figure is claimed only for a single-node job.
    if (facts.nodes == 1) facts.gpus_allocated = allocated_gpus_per_node;
    out.segment = compose_job_comment_segment(facts);
    if (!missing.empty()) {
        std::string list;
        for (const auto& h : missing) list += (list.empty() ? "" : ", ") + h;
        out.warnings.push_back("job merge: no verdict after " +
                               std::to_string(merge_wait_seconds).substr(0, 4) + " s from " + list +
                               " (helper still finishing or dead)");
    }
    return out;
}

}  // namespace stallscope
