// `stallscope watch JOBID|DIR`: a running job's state across its nodes, redrawn every N seconds from the
// timelines its helpers have flushed so far (each sample is flushed as it is taken), so an ML engineer sees
// "why is it slow right now" without waiting for the job to end; a hang banner names the culprit as soon
// as evidence files appear. Read-only: it never writes into the job directory.
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "helper/cli_args.h"
#include "helper/job_lookup.h"
#include "helper/stop_signal.h"
#include "helper/subcommands.h"
#include "helper/watch_view.h"
#include "libstallscope/job/job_report.h"

namespace stallscope::cli {
namespace {

// DIR as given; a job id through the shared lookup (job_lookup.h): while the job runs its AdminComment has
// no segment yet, so <WorkDir>/stallscope-<id> (the plugin's default) or ./stallscope-<id> answers.
std::string resolve_job_dir(const std::string& input, const std::string& sacct) {
    if (is_directory(input)) return input;
    if (!looks_like_job_id(input))
        throw std::runtime_error("watch: " + input + ": no such directory or job id");
    return find_job_directory(input, sacct, "watch");
}

WatchSize terminal_size() {
    WatchSize size;
    winsize ws{};
    if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
        size.rows = ws.ws_row;
        size.columns = ws.ws_col;
    } else if (const char* lines = std::getenv("LINES"); lines && std::atoi(lines) > 0) {
        size.rows = std::atoi(lines);
    }
    return size;
}

double wall_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_watch(int argc, char** argv, int first) {
    const ParsedArgs args =
        parse_args(argc, argv, first, {"interval", "sacct", "jobs", "top"}, {"json", "once"});
    if (args.positional.size() != 1) throw UsageError("watch needs one JOBID or DIR");
    const double interval =
        args.has("interval") ? parse_seconds("interval", *args.value("interval"), 0.5, 3600) : 5;
    const bool json = args.has("json");
    const bool once = args.has("once");
    JobReportOptions options;
    if (auto jobs = args.value("jobs")) options.threads = static_cast<unsigned>(parse_count("jobs", *jobs));
    const std::size_t top =
        args.has("top") ? static_cast<std::size_t>(parse_count("top", *args.value("top"))) : 20;
    const std::string dir = resolve_job_dir(args.positional.front(), args.value("sacct").value_or("sacct"));
    install_stop_handlers();
    const bool clear = !json && !once && ::isatty(STDOUT_FILENO);

    std::set<std::string> previous;
    bool first_frame = true;
    while (true) {
        const auto t0 = std::chrono::steady_clock::now();
        // The timelines replayed as they are now (a torn last line is read past), and the evidence files.
        const JobReport report = build_job_report({dir}, options);
        const JobHangEvidence hang = read_job_hang_evidence(dir);
        WatchFrame frame;
        frame.dir = dir;
        frame.now = wall_now();
        frame.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        frame.report = &report;
        frame.hang = &hang;
        frame.top_nodes = top;
        const std::set<std::string> codes = reason_codes(report);
        if (!first_frame)
            for (const auto& c : codes)
                if (!previous.count(c)) frame.new_reasons.insert(c);
        if (json) {
            std::fputs(
                (watch_json(frame).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n").c_str(),
                stdout);
        } else {
            if (clear) std::fputs("\x1b[H\x1b[2J", stdout);  // home + clear: redraw in place
            std::fputs(watch_text(frame, terminal_size()).c_str(), stdout);
        }
        std::fflush(stdout);
        previous = codes;
        first_frame = false;
        if (once) return report.nodes.empty() && hang.files.empty() ? 1 : 0;
        const auto next = t0 + std::chrono::duration<double>(interval);
        while (std::chrono::steady_clock::now() < next && !stop_requested())
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (stop_requested()) return 0;
    }
}

}  // namespace stallscope::cli
