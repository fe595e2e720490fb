// `stallscope record`: the per-step helper. Started by the SPANK plugin as the job user; samples until
// SIGTERM (sent from the last slurm_spank_task_exit), then writes the verdict within ~1 s and exits.
// Contract with the plugin (spank/): --liveness-fd is the write end of a pipe whose EOF tells slurmstepd
// we are gone; the last complete line written to it is the compact job-comment segment (the job's writer
// writes its node segment, then the merged job segment).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>

#include "helper/cli_args.h"
#include "helper/job_report_text.h"
#include "helper/output_dir.h"
#include "helper/output_fallback.h"
#include "helper/output_sinks.h"
#include "helper/record_hang.h"
#include "helper/sampling_gap.h"
#include "helper/stop_signal.h"
#include "helper/subcommands.h"
#include "helper/thresholds_option.h"
#include "libstallscope/job/job_finish.h"
#include "libstallscope/job/node_stats.h"
#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/sampler.h"
#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/job_comment.h"
#include "libstallscope/timeline/timeline.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/monotonic_clock.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope::cli {
namespace {

// Dense sampling at step start: short steps still get several samples, and the early minutes (where
// data-loader stalls and NCCL init problems show) are seen at 1 s resolution.
constexpr double kDenseStartSeconds = 10;
constexpr double kDenseIntervalSeconds = 1;
// How long the job's writer waits for the other helpers' verdicts (the plugin passes its own value,
// always below its stop_timeout).
constexpr double kDefaultMergeWaitSeconds = 5;

// One sampler per node per job: a second step of the same job (srun inside sbatch) finds the lock
// taken and leaves the sampling to the first. Returns -1 when the lock is held by someone else.
int take_node_lock(const std::string& path, std::vector<std::string>& warnings) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        warnings.push_back("lock file " + path + ": " + std::strerror(errno) +
                           " (sampling without de-duplication)");
        return 0;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(fd);
        if (err == EWOULDBLOCK) return -1;
        warnings.push_back("lock file " + path + ": " + std::strerror(err));
        return 0;
    }
    return fd;  // held until exit
}

void write_segment(int fd, const std::string& segment) {
    if (fd < 0) return;
    const std::string line = segment + "\n";
    [[maybe_unused]] ssize_t n = ::write(fd, line.data(), line.size());
}

}  // namespace

int run_record(int argc, char** argv, int first) {
    const ParsedArgs args =
        parse_args(argc, argv, first,
                   {"out-dir", "interval-seconds", "lock-file", "liveness-fd", "count", "prometheus-textfile",
                    "alert-webhook-url", "rules", "driver-timeout", "merge-wait-seconds", "timeline-format"},
                   {"job-writer"});
    if (!args.positional.empty()) throw UsageError("unexpected argument '" + args.positional.front() + "'");
    // 2 (default): timeline.<step>.<host>.jsonl.zst (changes, compressed); 1: .jsonl (every counter in
    // every line, for tools that read the plain lines). Checked before anything is created.
    const auto format_option = args.value("timeline-format");
    if (format_option && *format_option != "1" && *format_option != "2")
        throw UsageError("--timeline-format must be 1 or 2");
    const TimelineFormat format =
        format_option && *format_option == "1" ? TimelineFormat::jsonl_v1 : TimelineFormat::zstd_v2;
    auto requested_dir = args.value("out-dir");
    if (!requested_dir) throw UsageError("record needs --out-dir DIR");
    // A relative DIR is where the person typing it is: resolved against the working directory here (the
    // output-dir check takes absolute paths only, and would otherwise fall back to $TMPDIR).
    if (!requested_dir->empty() && requested_dir->front() != '/') {
        char cwd[4096];
        if (::getcwd(cwd, sizeof cwd) == nullptr)
            throw UsageError("--out-dir " + *requested_dir +
                             ": relative, and the working directory is unknown");
        requested_dir = std::string(cwd) + "/" + *requested_dir;
    }
    const double interval =
        args.has("interval-seconds")
            ? parse_seconds("interval-seconds", *args.value("interval-seconds"), 0.01, 86400)
            : 30.0;
    const long max_samples = args.has("count") ? parse_count("count", *args.value("count")) : -1;
    int liveness_fd = -1;
    if (auto v = args.value("liveness-fd")) {
        auto n = parse_u64(*v);
        if (!n || *n < 3 || *n > 1024) throw UsageError("--liveness-fd must be a descriptor number >= 3");
        liveness_fd = static_cast<int>(*n);
        // Children we might exec (nvidia-smi) must not keep the plugin waiting for EOF.
        if (::fcntl(liveness_fd, F_SETFD, FD_CLOEXEC) != 0) liveness_fd = -1;
    }
    // The job's writer (chosen by the plugin) merges the job dir at its stop and writes the job segment.
    const bool job_writer = args.has("job-writer");
    const double merge_wait =
        args.has("merge-wait-seconds")
            ? parse_seconds("merge-wait-seconds", *args.value("merge-wait-seconds"), 0, 600)
            : kDefaultMergeWaitSeconds;
    install_stop_handlers();
    // If slurmstepd dies, stop too (set after the uid drop, which clears it; spank-design.md 2.4).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);

    std::vector<std::string> warnings;
    if (auto lock = args.value("lock-file"); lock && take_node_lock(*lock, warnings) < 0) {
        std::fprintf(stderr,
                     "stallscope: another step of this job already samples this node; not sampling\n");
        write_segment(liveness_fd, kNotSamplingLine);
        return 0;
    }
    const OutputDir out = choose_output_dir(*requested_dir);
    if (!out.warning.empty()) warnings.push_back(out.warning);
    if (out.path.empty()) {
        std::fprintf(stderr, "stallscope: %s; not recording\n", out.warning.c_str());
        write_segment(liveness_fd,
                      std::string(kCommentPrefix) + "UNKNOWN conf=0.00 top=output_dir_unwritable");
        return 0;
    }

    const Thresholds thresholds = thresholds_from_option(args.value("rules"));
    Profiler profiler(thresholds);
    OutputSinks sinks(args, /*remove_textfile_at_exit=*/true);
    const double driver_timeout =
        args.has("driver-timeout") ? parse_seconds("driver-timeout", *args.value("driver-timeout"), 0.05, 600)
                                   : 5.0;
    const Roots roots = roots_from_environment();
    Sampler sampler = Sampler::for_node(roots, driver_timeout);

    Snapshot snap = sampler.sample();
    const std::string step_part = file_name_part(snap.context.step_id.empty() ? "0" : snap.context.step_id);
    const std::string stem = step_part + "." + file_name_part(snap.host);
    const std::string timeline_path = out.path + "/timeline." + stem + timeline_suffix(format);
    // Our diagnostics go to a log next to the timeline (the plugin gives us /dev/null as stderr).
    const std::string log_path = out.path + "/helper." + stem + ".log";
    if (int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
        log >= 0) {
        ::dup2(log, STDERR_FILENO);
        ::close(log);
    }

    TimelineWriter timeline(format);
    std::string error;
    if (!timeline.open(timeline_path, error)) warnings.push_back("timeline: " + error);
    const Json header = timeline_header(snap, interval, thresholds_as_pairs(thresholds));
    long write_failures = 0;
    std::string dir = out.path;  // where the files go now: the fallback once the output dir fails
    bool relocated = false;
    // One timeline write (a line, a sample): `write(error)` -> false on failure.
    auto write_timeline = [&](const auto& write) {
        if (!timeline.is_open() || write(error)) return;
        if (!relocated) {  // disk or quota full, I/O error: move to the fallback dir once and go on
            relocated = true;
            std::string warning;
            const bool moved = relocate_timeline(timeline, out.path, "failed during the step (" + error + ")",
                                                 &dir, &warning);
            warnings.push_back(warning);
            if (moved && write(error)) return;
        }
        if (write_failures++ == 0)
            warnings.push_back("timeline write failed (" + error + "); later lines may be missing");
    };
    auto append = [&](const Json& line) {
        write_timeline([&](std::string& e) { return timeline.append(line, e); });
    };
    write_timeline([&](std::string& e) { return timeline.write_header(header, e); });
    // A confirmed hang: evidence kept next to the timeline, on a thread of its own (record_hang.h).
    RecordHangHook hang(roots, step_part, file_name_part(snap.host));

    const double started = monotonic_now();
    double next = started;
    double last_sample_at = started;  // monotonic
    int gaps = 0;
    // A sampling gap (helper stopped, frozen or starved): an event line, and a warning for the first few.
    auto note_gap = [&](double since_last, double planned, bool until_stop) {
        if (!is_sampling_gap(since_last, planned)) return;
        const double at = profiler.last_sample()->time;  // the gap starts at the last sample
        append(sampling_gap_event(at, since_last, until_stop));
        if (++gaps <= 5) warnings.push_back(sampling_gap_warning(at, since_last, until_stop));
        if (gaps == 6) warnings.push_back("more sampling gaps: see the sampling_gap events in the timeline");
    };
    int gpu_count = 0;
    // Per-GPU and per-port statistics for the verdict file, so the job merge reads N small verdicts
    // instead of replaying N timelines.
    NodeStatsAccumulator node_stats;
    // Every distinct input warning of the step (NVML missing, unreadable counters) goes into the verdict
    // too: a reader of the verdict must not have to dig through sample lines to learn what was unmeasured.
    constexpr std::size_t kMaxSampleWarnings = 50;
    std::set<std::string> sample_warnings;
    const std::size_t setup_warnings = warnings.size();  // the sample warnings go right after these
    for (long n = 0;; ++n) {
        // Events against the previous sample, which the profiler holds until observe() replaces it.
        for (const auto& e : events_between(profiler.last_sample(), snap)) append(e);
        // The profiler keeps the sample as its previous one: moved there, not copied, and read back.
        const Profile profile = profiler.observe(std::move(snap));
        const Snapshot& current = *profiler.last_sample();
        node_stats.add(current, profiler.last_rates());
        for (const auto& w : current.warnings)
            if (sample_warnings.size() < kMaxSampleWarnings) sample_warnings.insert(w);
        write_timeline([&](std::string& e) { return timeline.append_sample(current, profile, e); });
        sinks.publish(current, profile, profiler.last_rates());
        hang.after_sample(current, profile, dir, append);
        // Measured GPUs only: a GPU Slurm allocated but NVML never answered for is not counted.
        gpu_count = std::max<int>(
            gpu_count,
            static_cast<int>(std::count_if(current.gpus.begin(), current.gpus.end(),
                                           [](const auto& g) { return g.utilization_pct.has_value(); })));
        if (max_samples > 0 && n + 1 >= max_samples) break;
        const double planned = (monotonic_now() - started < kDenseStartSeconds)
                                   ? std::min(interval, kDenseIntervalSeconds)
                                   : interval;
        next += planned;
        if (next < monotonic_now()) next = monotonic_now();
        sleep_until(next);
        if (stop_requested()) {
            note_gap(monotonic_now() - last_sample_at, planned, true);
            break;
        }
        const double sampled_at = monotonic_now();
        note_gap(sampled_at - last_sample_at, planned, false);
        last_sample_at = sampled_at;
        snap = sampler.sample(std::move(snap));  // observe() left the previous sample here: reused
    }

    // Stop path: bounded work only (the plugin waits at most stop_timeout, then SIGKILLs). The verdict is
    // written first; resolving alerts (up to a few seconds on a slow Alertmanager) comes after it. A hang
    // capture still running gets at most a second: its event then goes in before the verdict line.
    hang.at_stop(1.0, append);
    for (const auto& w : hang.warnings()) warnings.push_back(w);
    const StepVerdict verdict = profiler.verdict();
    warnings.insert(warnings.begin() + static_cast<std::ptrdiff_t>(setup_warnings), sample_warnings.begin(),
                    sample_warnings.end());
    for (const auto& w : sinks.warnings()) warnings.push_back(w);
    Json verdict_line{{"type", "verdict"}};
    const Json verdict_fields = to_json(verdict);
    for (const auto& [k, v] : verdict_fields.items()) verdict_line[k] = v;
    append(verdict_line);
    const std::string final_timeline = timeline.path().empty() ? timeline_path : timeline.path();
    timeline.close();
    std::string verdict_file = dir + "/verdict." + stem + ".json";
    // error_handler_t::replace: the job name, the output path and what the sources read may hold bytes
    // that are not UTF-8 (a Latin-1 job name or home directory); dump() would throw and lose the verdict.
    const auto document_text = [&] {
        return verdict_document(header, verdict, final_timeline, warnings, node_stats.to_json())
                   .dump(2, ' ', false, Json::error_handler_t::replace) +
               "\n";
    };
    if (!write_file_atomically(verdict_file, document_text(), true, error)) {
        const OutputDir fallback = fallback_output_dir(dir, "refused the verdict (" + error + ")");
        warnings.push_back(fallback.warning);
        verdict_file = fallback.path + "/verdict." + stem + ".json";
        if (fallback.path.empty() || !write_file_atomically(verdict_file, document_text(), true, error))
            std::fprintf(stderr, "stallscope: verdict: %s\n", error.c_str());
    }
    const int allocated_gpus = allocated_gpus_from_slurm_env();
    std::string segment = compose_comment_segment(verdict, gpu_count, profiler.last_sample()->host,
                                                  verdict_file, allocated_gpus);
    // The node's own segment first: the job's writer then merges (a wait of up to merge_wait plus reading
    // every node's files), and a merge the plugin cuts short at stop_timeout must still leave this node's
    // verdict in the job comment. The plugin keeps the last complete line (spank/comment.h last_segment).
    write_segment(liveness_fd, segment);
    if (job_writer) {
        // Merge the shared job dir (where the other nodes write), not a private fallback of ours.
        JobFinish job = finish_job(out.path, merge_wait, allocated_gpus, job_summary_text);
        for (const auto& w : job.warnings) std::fprintf(stderr, "stallscope: %s\n", w.c_str());
        if (!job.segment.empty()) write_segment(liveness_fd, job.segment);
    }
    sinks.close();
    return 0;
}

}  // namespace stallscope::cli
