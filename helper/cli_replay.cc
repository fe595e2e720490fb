// `stallscope replay TIMELINE|DIR... [--rules FILE] [--json] [--jobs N]`: deterministic re-profile of
// recordings, v1 (.jsonl) and v2 (.jsonl.zst), "-" for standard input, a directory for the timelines in it.
// Files are replayed in parallel (one thread per core by default; each replay is independent) and reported in
// the order given. On a terminal, stderr shows a progress bar with an ETA over the bytes of all files;
// nothing when it is not a terminal.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "helper/cli_args.h"
#include "helper/progress_bar.h"
#include "helper/subcommands.h"
#include "helper/text_output.h"
#include "helper/thresholds_option.h"
#include "helper/verdict_difference.h"
#include "libstallscope/job/replay_timeline.h"
#include "libstallscope/timeline/timeline_export.h"
#include "libstallscope/util/parse_number.h"
#include "libstallscope/util/printable.h"

namespace stallscope::cli {
namespace {

struct Replayed {
    bool ok = false;
    std::string error;
    ReplayResult result;
};

// A directory stands for its timelines, v1 and v2 (timeline.*.jsonl, timeline.*.jsonl.zst), sorted.
std::vector<std::string> expand_directories(const std::vector<std::string>& inputs) {
    std::vector<std::string> paths;
    for (const auto& in : inputs) {
        struct stat st {};
        if (in == "-" || ::stat(in.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            paths.push_back(in);
            continue;
        }
        std::vector<std::string> found;
        if (DIR* d = ::opendir(in.c_str())) {
            while (const dirent* e = ::readdir(d)) {
                const std::string name = e->d_name;
                if (name.rfind("timeline.", 0) == 0 &&
                    (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")))
                    found.push_back(in + "/" + name);
            }
            ::closedir(d);
        }
        if (found.empty()) found.push_back(in);  // replayed as it is: "not a regular file", rc 1
        std::sort(found.begin(), found.end());
        paths.insert(paths.end(), found.begin(), found.end());
    }
    return paths;
}

std::uint64_t total_bytes(const std::vector<std::string>& paths) {
    std::uint64_t total = 0;
    for (const auto& p : paths) {
        struct stat st {};
        if (p != "-" && ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            total += static_cast<std::uint64_t>(st.st_size);
    }
    return total;
}

void print(const std::string& path, const Replayed& r, bool json, bool rules_given) {
    if (!r.ok) {
        std::fprintf(stderr, "stallscope: replay: %s\n", printable(r.error).c_str());
        return;
    }
    const ReplayResult& result = r.result;
    for (const auto& w : result.warnings)
        std::fprintf(stderr, "stallscope: warning: %s\n", printable(w).c_str());
    if (json) {
        Json out = to_json(result.verdict);
        out["timeline"] = path;
        out["matches_recorded"] = result.matches_recorded ? Json(*result.matches_recorded) : Json(nullptr);
        if (result.matches_recorded && !*result.matches_recorded)
            out["recorded_difference"] = verdict_difference_json(verdict_difference(
                result.recorded_verdict, to_json(result.verdict), result.header, rules_given));
        out["replay_warnings"] = result.warnings;
        // replace: the path as given may be Latin-1 (or any bytes), and JSON text is UTF-8
        std::printf("%s\n", out.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
    } else {
        std::printf("%s: %zu samples\n%s", printable(path).c_str(), result.samples,
                    printable_lines(verdict_text(result.verdict)).c_str());
        // What differs, and why it may: a bare "differs" gives nothing to act on (audit finding 17).
        if (result.matches_recorded && *result.matches_recorded)
            std::printf("  matches the recorded verdict\n");
        else if (result.matches_recorded)
            std::fputs(printable_lines(
                           verdict_difference_text(verdict_difference(
                               result.recorded_verdict, to_json(result.verdict), result.header, rules_given)))
                           .c_str(),
                       stdout);
    }
}

}  // namespace

int run_export(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {}, {});
    if (args.positional.size() != 1) throw UsageError("export needs one timeline file (or - for stdin)");
    std::vector<std::string> warnings;
    std::string error;
    const bool ok = export_timeline(args.positional.front(), stdout, warnings, error);
    for (const auto& w : warnings) std::fprintf(stderr, "stallscope: warning: %s\n", printable(w).c_str());
    if (!ok) std::fprintf(stderr, "stallscope: export: %s\n", printable(error).c_str());
    return ok ? 0 : 1;
}

int run_replay(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {"rules", "jobs"}, {"json"});
    if (args.positional.empty()) throw UsageError("replay needs at least one timeline file");
    std::optional<Thresholds> thresholds;
    if (args.has("rules")) thresholds = thresholds_from_option(args.value("rules"));
    const std::vector<std::string> paths = expand_directories(args.positional);
    std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
    if (auto jobs = args.value("jobs")) {
        const auto n = parse_u64(*jobs);
        if (!n || *n < 1 || *n > 1024) throw UsageError("--jobs must be a number of threads (1-1024)");
        workers = static_cast<std::size_t>(*n);
    }
    workers = std::min(workers, paths.size());

    std::vector<Replayed> results(paths.size());
    std::vector<char> done(paths.size(), 0);  // under `mutex`
    std::atomic<std::size_t> next{0};
    std::atomic<std::uint64_t> bytes{0};
    std::mutex mutex;
    std::condition_variable changed;
    auto work = [&] {
        for (std::size_t i; (i = next++) < paths.size();) {
            Replayed& r = results[i];
            try {  // an exception must not escape a thread (std::terminate): it fails this file only
                r.ok =
                    replay_timeline(paths[i], thresholds, /*progress=*/false, r.result, r.error, {}, &bytes);
            } catch (const std::exception& e) {
                r.ok = false;
                r.error = paths[i] + ": " + e.what();
            }
            {
                std::lock_guard lock(mutex);
                done[i] = 1;
            }
            changed.notify_all();
        }
    };
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < workers; ++t) threads.emplace_back(work);

    // Results in the order given, each as soon as it and those before it are done; on a terminal the
    // progress bar is redrawn between them (every 200 ms).
    ProgressBar bar("files");
    const std::uint64_t total = bar.active() ? total_bytes(paths) : 0;
    int failures = 0;
    for (std::size_t printed = 0; printed < paths.size();) {
        std::size_t ready = printed, finished = 0;
        {
            std::unique_lock lock(mutex);
            changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return done[printed] != 0; });
            while (ready < paths.size() && done[ready]) ++ready;
            finished = static_cast<std::size_t>(std::count(done.begin(), done.end(), 1));
        }
        if (ready > printed) bar.clear();
        for (; printed < ready; ++printed) {
            print(paths[printed], results[printed], args.has("json"), args.has("rules"));
            if (!results[printed].ok) ++failures;
        }
        std::fflush(stdout);
        if (total > 0 && printed < paths.size()) bar.draw(bytes, total, finished, paths.size());
    }
    for (auto& t : threads) t.join();
    // A file that cannot be read at all, or is not a timeline, is an error of the invocation.
    return failures ? 1 : 0;
}

}  // namespace stallscope::cli
