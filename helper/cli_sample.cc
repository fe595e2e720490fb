// `stallscope [--json]` and `stallscope --interval-seconds N [--count K] [--json]`: sample this node.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "helper/cli_args.h"
#include "helper/output_sinks.h"
#include "helper/stop_signal.h"
#include "helper/subcommands.h"
#include "helper/text_output.h"
#include "helper/thresholds_option.h"
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/model/snapshot_json_text.h"
#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/nccl/nccl_tests.h"
#include "libstallscope/sources/sampler.h"
#include "libstallscope/util/counter_file.h"
#include "libstallscope/util/monotonic_clock.h"
#include "libstallscope/util/parse_number.h"
#include "libstallscope/util/printable.h"
#include "libstallscope/util/roots.h"

namespace stallscope::cli {
namespace {

// The process whose environment named the job the sampler adopted (newest first, our uid, at most 256
// looked at: the same rule as the context source), so the CLI can say "detected from pid N"; 0 if gone.
long pid_naming_job(const std::string& procfs, const std::string& job_id) {
    std::vector<long> pids;
    if (DIR* dir = ::opendir(procfs.c_str())) {
        for (std::size_t n = 0; const dirent* e = ::readdir(dir); ++n) {
            if (n > 65536) break;
            if (auto pid = parse_u64(e->d_name)) pids.push_back(static_cast<long>(*pid));
        }
        ::closedir(dir);
    }
    std::sort(pids.begin(), pids.end(), std::greater<>());
    const std::string wanted = "SLURM_JOB_ID=" + job_id;
    std::size_t examined = 0;
    for (const long pid : pids) {
        if (pid == ::getpid() || examined >= 256) continue;
        const std::string dir = procfs + "/" + std::to_string(pid);
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
        ++examined;
        std::string error;
        const auto environ_text = read_text_file(dir + "/environ", error, 256 * 1024);
        if (!environ_text) continue;
        for (std::size_t at = environ_text->find(wanted); at != std::string::npos;
             at = environ_text->find(wanted, at + 1)) {
            const std::size_t end = at + wanted.size();
            if ((at == 0 || (*environ_text)[at - 1] == '\0') &&
                (end == environ_text->size() || (*environ_text)[end] == '\0'))
                return pid;
        }
    }
    return 0;
}

// One write(2) for the whole line (stdio split a ~50 KB line into three: its buffer, then the rest), so
// a reader of the pipe gets whole lines at once. False, with errno, when standard output refuses it (a
// full disk); SIGPIPE ends the process when the reader of a pipe goes.
bool write_line(const std::string& line) {
    std::fflush(stdout);
    for (std::size_t done = 0; done < line.size();) {
        const ssize_t n = ::write(STDOUT_FILENO, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) errno = EIO;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

int run_sample(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first,
                                       {"interval-seconds", "count", "prometheus-textfile",
                                        "alert-webhook-url", "rules", "nccl-test-args", "driver-timeout"},
                                       {"json", "nccl-test"});
    if (!args.positional.empty()) throw UsageError("unexpected argument '" + args.positional.front() + "'");
    const bool json = args.has("json");
    const bool periodic = args.has("interval-seconds");
    if (args.has("count") && !periodic) throw UsageError("--count needs --interval-seconds");
    const double interval =
        periodic ? parse_seconds("interval-seconds", *args.value("interval-seconds"), 0.001, 86400) : 0;
    const long count = args.has("count") ? parse_count("count", *args.value("count")) : (periodic ? -1 : 1);

    Profiler profiler(thresholds_from_option(args.value("rules")));
    OutputSinks sinks(args, /*remove_textfile_at_exit=*/false);
    const double driver_timeout =
        args.has("driver-timeout") ? parse_seconds("driver-timeout", *args.value("driver-timeout"), 0.05, 600)
                                   : 5.0;
    const Roots roots = roots_from_environment();
    Sampler sampler = Sampler::for_node(roots, driver_timeout);
    install_stop_handlers();
    // --nccl-test: one bounded all_reduce_perf run before the first sample; its result rides on sample 1.
    if (args.has("nccl-test-args") && !args.has("nccl-test"))
        throw UsageError("--nccl-test-args needs --nccl-test");
    std::optional<NcclTestResult> nccl_test;
    if (args.has("nccl-test"))
        nccl_test =
            nccl::run_nccl_test("all_reduce_perf",
                                args.has("nccl-test-args") ? nccl::split_args(*args.value("nccl-test-args"))
                                                           : nccl::default_nccl_test_args(),
                                std::chrono::minutes(5));

    // The one-shot CLI run outside a job may adopt a job found in another process's environment: say so.
    const char* own_job = std::getenv("SLURM_JOB_ID");
    const bool own_job_context = own_job && *own_job;
    std::vector<std::string> shown_warnings;  // periodic text: the set printed last
    long detected_pid = -1;                   // -1: not looked for yet
    std::string text;                         // --json output, kept between samples

    int output_error = 0;  // errno of a write to standard output that failed: the run stops
    Snapshot sampled;      // observe() hands the previous sample back here; the sources reuse its maps
    double next = monotonic_now();
    for (long n = 0; (count < 0 || n < count) && !stop_requested(); ++n) {
        if (n > 0) {
            next += interval;
            // If a sample overran the interval, re-anchor rather than firing a burst of catch-up samples.
            if (next < monotonic_now()) next = monotonic_now();
            sleep_until(next);
            if (stop_requested()) break;
        }
        sampled = sampler.sample(std::move(sampled));
        if (nccl_test && n == 0) sampled.nccl.nccl_test = nccl_test;
        const Profile profile = profiler.observe(std::move(sampled));  // kept by the profiler, not copied
        const Snapshot& snap = *profiler.last_sample();
        sinks.publish(snap, profile, profiler.last_rates());
        // One-shot: wait (bounded) for the sinks, so that a failed post is in this output, not lost.
        if (!periodic) sinks.close();
        const std::vector<std::string> sink_warnings = sinks.take_new_warnings();
        for (const auto& w : sink_warnings)
            std::fprintf(stderr, "stallscope: warning: %s\n", printable(w).c_str());
        const bool detected = snap.context.scheduler == "slurm" && !own_job_context;
        if (detected && detected_pid < 0) detected_pid = pid_naming_job(roots.procfs, snap.context.job_id);
        if (json) {
            Json more_context;  // null unless the job was detected in another process's environment
            if (detected) {
                more_context = Json::object();
                more_context["detected_from"] = "another process's environment";
                if (detected_pid > 0) more_context["detected_from_pid"] = detected_pid;
            }
            const SampleLine line{snap, profiler.last_rates(), profile, sink_warnings,
                                  detected ? &more_context : nullptr};
            // Periodic: exactly one single-line object per sample (machine-friendly), written from the
            // structs (append_sample_line_json: the tree's dump() bytes, without the tree) into a buffer
            // kept between samples; one-shot, or a line that writer cannot promise (ill-formed UTF-8):
            // the tree.
            text.clear();
            if (!periodic || !append_sample_line_json(text, line)) {
                const Json out = sample_line_to_json(line);
                // replace: a job name or a source's text that is not UTF-8 must not end the CLI
                text = out.dump(periodic ? -1 : 2, ' ', false, Json::error_handler_t::replace);
            }
            text.push_back('\n');
            if (!write_line(text)) {
                output_error = errno;
                break;
            }
        } else if (periodic) {
            // Every sample gets its time; a warning is printed once, then again only when the set changes.
            std::vector<std::string> current = snap.warnings;
            current.insert(current.end(), sink_warnings.begin(), sink_warnings.end());
            std::vector<std::string> fresh;
            for (const auto& w : current)
                if (std::find(shown_warnings.begin(), shown_warnings.end(), w) == shown_warnings.end())
                    fresh.push_back(w);
            shown_warnings = snap.warnings;
            std::fputs(profile_text(snap, profile, {true, &fresh, detected ? detected_pid : -1}).c_str(),
                       stdout);
        } else {
            std::vector<std::string> all = snap.warnings;
            all.insert(all.end(), sink_warnings.begin(), sink_warnings.end());
            std::fputs(profile_text(snap, profile, {false, &all, detected ? detected_pid : -1}).c_str(),
                       stdout);
        }
        if (std::fflush(stdout) != 0) output_error = errno;
        if (!output_error && std::ferror(stdout)) output_error = EIO;  // an earlier fputs failed
        if (output_error) break;
    }
    sinks.close();
    for (const auto& w : sinks.take_new_warnings())
        std::fprintf(stderr, "stallscope: warning: %s\n", printable(w).c_str());
    // Samples nobody can read are not taken on a full disk or a closed stdout: stop and say so.
    if (output_error) {
        std::fprintf(stderr, "stallscope: cannot write the output: %s\n", std::strerror(output_error));
        return 1;
    }
    // An output the user asked for that could not be written is a failure of the run (exit 1).
    return sinks.warnings().empty() ? 0 : 1;
}

}  // namespace stallscope::cli
