#include "libstallscope/job/job_report.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "libstallscope/job/job_files.h"
#include "libstallscope/job/parallel_each.h"
#include "libstallscope/job/replay_timeline.h"
#include "libstallscope/job/verdict_file.h"
#include "libstallscope/rules/verdict.h"
#include "libstallscope/util/median.h"

namespace stallscope {
namespace {

// What loading one recording learns about the job besides the recording itself; merged in file order.
// Kept per recording until all are loaded: a whole JobReport each was ~1 KB a node for four fields.
struct JobScratch {
    std::string job_id, user, job_name;
    std::vector<std::string> warnings, notes;
};

// "0.gpu-node-05" -> step "0", host "gpu-node-05": who a recording is when its files say nothing.
void identity_from_stem(const std::string& stem, NodeRecording& node) {
    if (stem.empty()) return;
    const auto dot = stem.find('.');
    if (node.step_id.empty()) node.step_id = stem.substr(0, dot);
    if (node.host.empty() && dot != std::string::npos) node.host = stem.substr(dot + 1);
}

// Says why allocated GPUs show no numbers (no driver, NVML missing) instead of a silent "0 GPUs".
void note_unmeasured_gpus(JobScratch& job, const std::string& host, std::size_t allocated,
                          const std::vector<std::string>& warnings) {
    std::string why = "no GPU telemetry";
    for (const auto& w : warnings)
        if (w.find("GPU") != std::string::npos) why = w;
    job.notes.push_back(host + ": " + std::to_string(allocated) + " GPU(s) allocated but none measured - " +
                        why);
}

// False when the timeline could not be read at all (the error is in the warnings).
bool fill_from_replay(JobScratch& job, NodeRecording& node, const std::string& timeline, bool have_verdict,
                      const std::optional<Thresholds>& rules, std::atomic<std::uint64_t>* bytes_read) {
    NodeStatsAccumulator stats;
    ReplayResult r;
    std::string error;
    const bool replayed = replay_timeline(
        timeline, rules, false, r, error, [&](const Snapshot& s, const Rates* rates) { stats.add(s, rates); },
        bytes_read);
    if (!replayed) job.warnings.push_back(error);
    for (const auto& w : r.warnings) job.warnings.push_back(w);
    auto header_string = [&](const char* key) {
        if (!r.header.is_object()) return std::string();
        const auto it = r.header.find(key);
        return it != r.header.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    if (node.host.empty()) node.host = header_string("host");
    if (node.step_id.empty()) node.step_id = header_string("step_id");
    if (r.first_sample) {
        if (node.host.empty()) node.host = r.first_sample->host;
        const auto& ctx = r.first_sample->context;
        if (job.job_id.empty()) job.job_id = ctx.job_id, job.user = ctx.user, job.job_name = ctx.job_name;
    }
    if (job.job_id.empty()) job.job_id = header_string("job_id");
    if (!have_verdict) node.verdict = r.verdict;
    node.stats = stats.finish(node.host);
    node.source = "replay";
    node.verdict_recorded = have_verdict || r.recorded_verdict.is_object();
    node.incomplete = !node.verdict_recorded;
    if (node.stats.gpus.empty() && r.first_sample && !r.first_sample->context.gpus.empty())
        note_unmeasured_gpus(job, node.host, r.first_sample->context.gpus.size(), r.first_sample->warnings);
    return replayed;
}

bool non_empty_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

NodeRecording load_recording(JobScratch& job, const RecordingFiles& files,
                             const std::optional<Thresholds>& rules, std::atomic<std::uint64_t>* bytes_read) {
    NodeRecording node;
    node.timeline_path = files.timeline;
    node.verdict_path = files.verdict;
    bool have_verdict = false, have_stats = false;
    if (!files.verdict.empty()) {
        VerdictFile vf;
        std::string error;
        if (read_verdict_file(files.verdict, vf, error)) {
            have_verdict = true;
            node.host = vf.host, node.step_id = vf.step_id, node.verdict = vf.verdict;
            if (job.job_id.empty()) job.job_id = vf.job_id, job.user = vf.user, job.job_name = vf.job_name;
            for (auto& p : vf.problems) job.warnings.push_back(std::move(p));
            if (vf.stats) node.stats = std::move(*vf.stats), have_stats = true;
            if (have_stats && node.stats.gpus.empty() && node.stats.gpus_allocated > 0)
                note_unmeasured_gpus(job, node.host.empty() ? files.stem : node.host,
                                     static_cast<std::size_t>(node.stats.gpus_allocated), vf.warnings);
        } else {
            job.warnings.push_back(error);
        }
    }
    identity_from_stem(files.stem, node);
    bool replayed = true;
    if (rules && !files.timeline.empty()) {
        replayed =
            fill_from_replay(job, node, files.timeline, false, rules, bytes_read);  // as --rules decides
        node.verdict_recorded = node.verdict_recorded || have_verdict;
        node.incomplete = !node.verdict_recorded;
    } else if (have_stats) {
        node.source = "verdict";
        node.verdict_recorded = true;
    } else if (!files.timeline.empty()) {
        replayed = fill_from_replay(job, node, files.timeline, have_verdict, std::nullopt, bytes_read);
    } else {
        node.source = "verdict";
        node.verdict_recorded = have_verdict;
        node.incomplete = !have_verdict;
    }
    // Garbage, another program's JSON, a wrong schema: not a recording of anything (an empty timeline is
    // one, of a helper that died at once).
    node.unreadable = !have_verdict && !replayed && non_empty_file(files.timeline);
    if (node.host.empty()) node.host = base_name(files.timeline.empty() ? files.verdict : files.timeline);
    if (rules && files.timeline.empty())
        job.warnings.push_back(node.host +
                               ": no timeline to re-profile with --rules; its recorded verdict is shown");
    // A recording without a single sample (helper died at once) is named, whatever its verdict says.
    if (node.verdict.samples <= 0 && node.stats.samples <= 0) node.incomplete = true;
    std::stable_sort(node.stats.gpus.begin(), node.stats.gpus.end(),
                     [](const GpuStats& a, const GpuStats& b) { return a.index < b.index; });
    for (auto& g : node.stats.gpus) g.host = node.host, g.step_id = node.step_id;
    for (auto& p : node.stats.ports) p.host = node.host, p.step_id = node.step_id;
    node.mean_gpu_util_pct = node.stats.mean_gpu_util_pct();
    node.gpus_measured = node.stats.gpus_measured();
    node.label = node.verdict.label;
    return node;
}

bool sorts_last(const std::string& code) {
    return is_symptom(code) || code == "node_straggler";
}

// Reasons that set the label first, then other warnings, then info; causes before symptoms; earliest
// first inside each group (the root cause before its symptoms).
void order_reasons(StepVerdict& v) {
    auto group = [&](const ReasonSummary& r) {
        if (r.reason.label == v.label) return 0;
        return r.reason.severity == "info" ? 2 : 1;
    };
    std::stable_sort(v.reasons.begin(), v.reasons.end(), [&](const ReasonSummary& a, const ReasonSummary& b) {
        return std::make_tuple(group(a), sorts_last(a.reason.code), a.reason.first_seen, a.reason.subject) <
               std::make_tuple(group(b), sorts_last(b.reason.code), b.reason.first_seen, b.reason.subject);
    });
}

void add_unknown_reason(StepVerdict& v, const std::string& code) {
    if (std::find(v.unknown_reasons.begin(), v.unknown_reasons.end(), code) == v.unknown_reasons.end())
        v.unknown_reasons.push_back(code);
}

// Worst label across the recordings that hold samples; an empty recording is named by
// note_incomplete_recordings and adds nothing else (no step_too_short, no 1970 start time).
void merge_verdicts(JobReport& job) {
    StepVerdict& v = job.verdict;
    const bool prefix_host = job.hosts > 1;
    const NodeRecording* worst = nullptr;
    bool have_times = false;
    for (const auto& n : job.nodes) {
        const StepVerdict& nv = n.verdict;
        if (nv.samples <= 0 && nv.reasons.empty()) continue;
        const int rank = job_label_rank(nv.label);
        const bool earlier =
            worst && !nv.reasons.empty() && !worst->verdict.reasons.empty() &&
            nv.reasons.front().reason.first_seen < worst->verdict.reasons.front().reason.first_seen;
        if (!worst || rank > job_label_rank(worst->verdict.label) ||
            (rank == job_label_rank(worst->verdict.label) && earlier))
            worst = &n;
        for (auto r : nv.reasons) {
            if (prefix_host)
                r.reason.subject = n.host + (r.reason.subject.empty() ? "" : ":" + r.reason.subject);
            v.reasons.push_back(std::move(r));
        }
        if (nv.label == kLabelUnknown)
            for (const auto& u : nv.unknown_reasons) add_unknown_reason(v, u);
        if (nv.samples > 0 && nv.end_time > 0) {
            v.start_time = have_times ? std::min(v.start_time, nv.start_time) : nv.start_time;
            v.end_time = have_times ? std::max(v.end_time, nv.end_time) : nv.end_time;
            have_times = true;
        }
        v.samples += nv.samples;
    }
    if (!worst) return;
    v.label = worst->verdict.label;
    v.confidence = worst->verdict.confidence;
    v.bottleneck_hint = worst->verdict.bottleneck_hint;
    v.worst_gpu = worst->verdict.worst_gpu;
    v.worst_port = worst->verdict.worst_port;
    v.worst_interface = worst->verdict.worst_interface;
    if (job_label_rank(v.label) >= 2) job.worst_node = worst->host;
    if (!v.worst_port.empty()) job.worst_port = (prefix_host ? worst->host + ":" : "") + v.worst_port;
    if (v.label != kLabelUnknown) v.unknown_reasons.clear();
}

// A node whose GPUs run well below (< 70 % of) the median node of the same step holds back every
// collective of that step; no single node's verdict can see that, so each one becomes a job reason.
// A step recorded on one node only is compared with the job's median node instead: with one sampler
// per node per job, concurrent steps of one workload (`srun --overlap`, a batch step plus srun steps)
// can leave each node's recording under a different step id.
void find_straggler_nodes(JobReport& job) {
    std::map<std::string, std::vector<double>> utils_by_step;
    std::vector<double> all_utils;
    for (const auto& n : job.nodes)
        if (n.mean_gpu_util_pct)
            utils_by_step[n.step_id].push_back(*n.mean_gpu_util_pct),
                all_utils.push_back(*n.mean_gpu_util_pct);
    std::map<std::string, double> medians;
    for (const auto& [step, utils] : utils_by_step)
        if (utils.size() >= 2)
            medians[step] = median(utils);
        else if (all_utils.size() >= 2)
            medians[step] = median(all_utils);
    const NodeRecording* slowest = nullptr;
    std::set<std::string> hosts;
    for (auto& n : job.nodes) {
        const auto m = medians.find(n.step_id);
        if (!n.mean_gpu_util_pct || m == medians.end() || m->second <= 20 ||
            *n.mean_gpu_util_pct >= 0.7 * m->second)
            continue;
        n.straggler = true;
        if (job_label_rank(n.label) < job_label_rank(kLabelSlow)) n.label = kLabelSlow;
        hosts.insert(n.host);
        if (!slowest || *n.mean_gpu_util_pct < *slowest->mean_gpu_util_pct) slowest = &n;
        ReasonSummary r;
        r.reason.code = "node_straggler";
        r.reason.category = "gpu";
        r.reason.severity = "warning";
        r.reason.label = kLabelSlow;
        r.reason.subject = n.host;
        char msg[256];
        std::snprintf(
            msg, sizeof msg,
            "GPUs at %.0f %% mean utilization while the step's nodes run at %.0f %% (median) - this "
            "node holds back every collective",
            *n.mean_gpu_util_pct, m->second);
        r.reason.message = n.host + ": " + msg;
        r.reason.evidence = {{"node_util_pct", *n.mean_gpu_util_pct},
                             {"median_node_util_pct", m->second},
                             {"threshold_frac_of_median", 0.7}};
        r.reason.first_seen = n.verdict.start_time;
        r.last_seen = n.verdict.end_time;
        r.samples = n.verdict.samples;
        r.duration_seconds = n.verdict.duration_seconds();
        r.share = job.verdict.duration_seconds() > 0
                      ? std::min(1.0, r.duration_seconds / job.verdict.duration_seconds())
                      : 0;
        job.verdict.reasons.push_back(std::move(r));
    }
    if (!slowest) return;
    job.straggler_node = slowest->host;
    job.straggler_nodes.assign(hosts.begin(), hosts.end());
    if (job_label_rank(job.verdict.label) < job_label_rank(kLabelSlow)) {
        job.verdict.label = kLabelSlow;
        job.verdict.bottleneck_hint = "compute";
        job.verdict.unknown_reasons.clear();
        job.worst_node = slowest->host;
    }
}

// A GPU well below the other GPUs of its own node (a whole slow node is a straggler node instead).
void find_straggler_gpu(JobReport& job) {
    double worst_gap = 0;
    for (std::size_t i = 0; i < job.nodes.size(); ++i) {
        const NodeRecording& n = job.nodes[i];
        const std::vector<GpuStats>& gpus = job.gpus.of_node(i);
        std::vector<double> utils;
        for (const auto& g : gpus)
            if (g.mean_util_pct) utils.push_back(*g.mean_util_pct);
        const double m = median(utils);
        if (utils.size() < 2 || m <= 20) continue;
        for (const auto& g : gpus)
            if (g.mean_util_pct && *g.mean_util_pct < 0.7 * m && m - *g.mean_util_pct > worst_gap) {
                worst_gap = m - *g.mean_util_pct;
                job.straggler_gpu = n.host + ":GPU " + std::to_string(g.index);
            }
    }
}

double port_score(const PortStats& s) {
    return s.loss_per_million_packets.value_or(0) + s.cnp_per_second.value_or(0) +
           s.pause_occupancy.value_or(0) * 1e4;
}

void find_worst_port(JobReport& job) {
    if (!job.worst_port.empty()) return;
    const PortStats* worst = nullptr;
    for (const auto& s : job.ports)
        if (port_score(s) > 0 && (!worst || port_score(s) > port_score(*worst))) worst = &s;
    if (worst) job.worst_port = (job.hosts > 1 ? worst->host + ":" : "") + worst->port;
}

// A recording without any verdict (no verdict file, no verdict line): its helper stopped before the
// step ended (SIGKILL, OOM kill, crash) or is still running. What it flushed was replayed; the job verdict
// names the node, and a FAST over partial data becomes UNKNOWN (silence must not read as FAST).
void note_incomplete_recordings(JobReport& job) {
    std::set<std::string> missing;
    for (auto& n : job.nodes) {
        if (!n.incomplete) continue;
        missing.insert(n.host);
        if (n.label == kLabelFast) n.label = kLabelUnknown;  // partial data never reads as FAST
        const std::string what = n.timeline_path.empty() ? "no timeline" : base_name(n.timeline_path);
        ReasonSummary r;
        r.reason.code = "recording_incomplete";
        r.reason.category = "telemetry";
        r.reason.severity = "warning";
        r.reason.label = kLabelUnknown;
        r.reason.subject = n.host;
        r.reason.evidence = {{"samples_flushed", static_cast<double>(n.verdict.samples)}};
        if (n.verdict.samples > 0) {
            r.reason.message = n.host + ": " + n.timeline_path +
                               " ends without a verdict line - the helper stopped before the step ended "
                               "(killed, crashed, or still running); the " +
                               std::to_string(n.verdict.samples) + " samples it flushed (up to " +
                               format_rfc3339(n.verdict.end_time) + ") are replayed";
            r.reason.first_seen = r.last_seen = n.verdict.end_time;
        } else {
            r.reason.message = n.host + ": " + what + " holds no sample" +
                               (n.verdict_recorded ? "" : " and there is no verdict") +
                               " - the helper stopped at once (killed, crashed) or never sampled; this "
                               "node is left out of the job's numbers";
            r.reason.first_seen = r.last_seen = job.verdict.end_time;
        }
        job.verdict.reasons.push_back(std::move(r));
        if (job.verdict.label == kLabelFast || job.verdict.label == kLabelUnknown) {
            job.verdict.label = kLabelUnknown;
            add_unknown_reason(job.verdict, "recording_incomplete");
        }
    }
    job.missing_nodes.assign(missing.begin(), missing.end());
}

void summarize_steps(JobReport& job) {
    std::map<std::string, StepSummary> steps;
    std::set<std::string> hosts;
    for (const auto& n : job.nodes) {
        hosts.insert(n.host);
        StepSummary& s = steps[n.step_id];
        const bool first_times = s.samples == 0;
        s.step_id = n.step_id;
        ++s.nodes;
        if (n.verdict.samples <= 0 || n.verdict.end_time <= 0) continue;
        s.start_time = first_times ? n.verdict.start_time : std::min(s.start_time, n.verdict.start_time);
        s.end_time = first_times ? n.verdict.end_time : std::max(s.end_time, n.verdict.end_time);
        s.samples += n.verdict.samples;
    }
    for (auto& [id, s] : steps) job.step_summaries.push_back(s);
    job.steps = static_cast<int>(steps.size());
    job.hosts = static_cast<int>(hosts.size());
}

// Every verdict is capped (verdict_file_bounds), and so is the number of recordings per directory; this
// caps their product: GPU, port and reason rows kept over the whole job (a 16 000-node job of 8 GPUs and
// 8 ports per node keeps ~260 000). A recording past it keeps its label and says why its rows are gone.
constexpr std::size_t kMaxJobEntries = 1u << 20;

void within_job_budget(JobScratch& scratch, NodeRecording& node, std::atomic<std::size_t>& entries) {
    const std::size_t n = node.stats.gpus.size() + node.stats.ports.size() + node.verdict.reasons.size();
    if (entries.fetch_add(n) + n <= kMaxJobEntries) return;
    scratch.warnings.push_back(node.host + ": over the job's limit of " + std::to_string(kMaxJobEntries) +
                               " GPU, port and reason rows; this recording's rows are left out");
    node.stats.gpus.clear(), node.stats.ports.clear(), node.verdict.reasons.clear();
    node.stats.gpus.shrink_to_fit(), node.stats.ports.shrink_to_fit(), node.verdict.reasons.shrink_to_fit();
}

// Every node's GPU and port rows into the job's, in node order: each node's vectors are moved, no row is
// copied (NodeRows).
void collect_rows(JobReport& job) {
    job.gpus.reserve_nodes(job.nodes.size()), job.ports.reserve_nodes(job.nodes.size());
    for (auto& n : job.nodes) {
        job.gpus.add_node(std::move(n.stats.gpus));
        job.ports.add_node(std::move(n.stats.ports));
        n.stats.gpus.clear(), n.stats.ports.clear();  // moved from: empty, said so
    }
}

// Each recording into its own scratch report (warnings, notes, job identity), merged in file order: the
// result is the same with 1 thread or 64. A thread's exception (out of memory) fails that recording only.
void load_recordings(JobReport& job, const std::map<std::string, RecordingFiles>& recordings,
                     const JobReportOptions& options) {
    std::vector<const RecordingFiles*> files;
    for (const auto& [key, f] : recordings) files.push_back(&f);
    std::vector<JobScratch> scratch(files.size());
    std::vector<NodeRecording> loaded(files.size());
    std::atomic<std::uint64_t> bytes_read{0};
    std::atomic<std::size_t> entries{0};
    auto load = [&](std::size_t i) {
        try {
            loaded[i] = load_recording(scratch[i], *files[i], options.rules, &bytes_read);
            within_job_budget(scratch[i], loaded[i], entries);
        } catch (const std::exception& e) {
            scratch[i].warnings.push_back(files[i]->stem + ": not loaded (" + e.what() + ")");
            loaded[i].host = files[i]->stem, loaded[i].incomplete = true;
        }
    };
    std::function<void(std::size_t)> progress;
    if (options.progress)
        progress = [&](std::size_t done) { options.progress(done, files.size(), bytes_read.load()); };
    parallel_each(files.size(), options.threads, load, progress);
    job.nodes.reserve(files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
        JobScratch& s = scratch[i];
        if (job.job_id.empty()) job.job_id = s.job_id, job.user = s.user, job.job_name = s.job_name;
        job.warnings.insert(job.warnings.end(), s.warnings.begin(), s.warnings.end());
        job.notes.insert(job.notes.end(), s.notes.begin(), s.notes.end());
        if (!loaded[i].unreadable) job.nodes.push_back(std::move(loaded[i]));
    }
}

}  // namespace

JobReport build_job_report(const std::vector<std::string>& inputs, const JobReportOptions& options) {
    JobReport job;
    load_recordings(job, find_recordings(inputs, job.warnings), options);
    std::stable_sort(job.nodes.begin(), job.nodes.end(), [](const NodeRecording& a, const NodeRecording& b) {
        return std::tie(a.step_id, a.host) < std::tie(b.step_id, b.host);
    });
    collect_rows(job);
    summarize_steps(job);
    merge_verdicts(job);
    find_straggler_nodes(job);
    find_straggler_gpu(job);
    find_worst_port(job);
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    if (!options.job_ended)
        find_running_recordings(job,
                                static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9);
    note_incomplete_recordings(job);
    order_reasons(job.verdict);
    if (job.hosts > 1) job.verdict.worst_port = job.worst_port;
    if (!job.verdict.reasons.empty()) {
        job.root_cause = job.verdict.reasons.front();
        const std::string& subject = job.root_cause->reason.subject;
        job.root_cause_node = job.hosts > 1 ? subject.substr(0, subject.find(':')) : job.nodes.front().host;
    }
    write_job_notes(job);
    read_job_hang(job, inputs);
    return job;
}

}  // namespace stallscope
