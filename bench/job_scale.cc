// The job merge at cluster scale (ARCHITECTURE.md "Performance targets": a 1 000-node job merged and
// reported in < 10 s each; issue 12).
//
//   ninja -C build bench/job_scale && build/bench/job_scale [nodes=1000] [samples=140] [baseline_nodes=100]
//
// Builds a finished N-node job dir in a temp dir from one real recording: `samples` samples of
// fixtures/nodes/dgx-h100 (8 GPUs from the fake libnvidia-ml when built), written as the helper writes
// them, with the verdict file the helper writes (verdict_document + NodeStatsAccumulator::to_json). Per
// host: the verdict cloned with the host renamed, the timeline hard-linked (same bytes, no disk cost).
// Perturbations: every 8th node a straggler (GPU means x 0.4), node 2 faulty (rdma_port_down, FAIL_RISK),
// node N-1 without its verdict (helper killed: its timeline is replayed), node N an empty timeline.
// Then times:
//   merge   build_job_report(dir) + summary.json/.txt written + the job comment segment (in process);
//   report  `stallscope report DIR` end to end (fork/exec): wall, peak RSS, line count (and --all's);
//   baseline the old path, every timeline replayed: build_job_report on `baseline_nodes` timelines
//           (replay only), scaled to N.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "helper/job_report.h"
#include "helper/node_stats.h"
#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/sampler.h"
#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/job_comment.h"
#include "libstallscope/timeline/timeline.h"
#include "libstallscope/util/atomic_file.h"

using namespace stallscope;
using stallscope::bench::monotonic_now;
namespace fs = std::filesystem;

namespace {

constexpr double kGoalSeconds = 10;
constexpr std::size_t kGoalLines = 300;

void grow(Counter& c, std::uint64_t by) {
    if (c) *c += by;
}

// Sample i of the step: traffic counters move every second, error counters stay put.
Snapshot step_sample(const Snapshot& base, std::uint64_t i) {
    Snapshot s = base;
    s.time = base.time + static_cast<double>(i);
    for (auto& iface : s.interfaces) grow(iface.rx_bytes, i * 1'000'000), grow(iface.tx_bytes, i * 900'000);
    for (auto& port : s.rdma)
        for (auto* map : {&port.counters, &port.hw_counters})
            for (auto& [name, value] : *map)
                if (name.find("packets") != std::string::npos || name.find("_data") != std::string::npos)
                    grow(value, i * 10'000);
    for (auto& gpu : s.gpus) grow(gpu.energy_mj, i * 300'000);
    return s;
}

std::string dump_line(const Json& line) {
    return line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

double peak_rss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

struct ChildRun {
    int exit_code = -1;
    double wall = 0, max_rss_mib = 0;
    std::size_t lines = 0;
};

ChildRun run_report(const std::string& binary, const std::string& dir, const std::string& out, bool all) {
    ChildRun r;
    const double start = monotonic_now();
    const pid_t pid = fork();
    if (pid == 0) {
        if (FILE* f = std::fopen(out.c_str(), "w")) dup2(fileno(f), STDOUT_FILENO);
        if (FILE* null = std::fopen("/dev/null", "w")) dup2(fileno(null), STDERR_FILENO);
        if (all)
            execl(binary.c_str(), binary.c_str(), "report", dir.c_str(), "--all",
                  static_cast<char*>(nullptr));
        else
            execl(binary.c_str(), binary.c_str(), "report", dir.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    r.wall = monotonic_now() - start;
    r.max_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string text = bench::read_file(out);
    r.lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    return r;
}

const char* verdict_of(bool ok) {
    return ok ? "met" : "NOT MET";
}

}  // namespace

int main(int argc, char** argv) {
    const int nodes = argc > 1 ? std::atoi(argv[1]) : 1000;
    const long samples = argc > 2 ? std::atol(argv[2]) : 140;
    const int baseline_nodes = std::min(nodes, argc > 3 ? std::atoi(argv[3]) : 100);
    if (nodes < 4 || samples < 2 || baseline_nodes < 1)
        return std::fprintf(stderr, "job_scale: nodes >= 4, samples >= 2, baseline_nodes >= 1\n"), 2;
    const std::string binary =
        std::getenv("STALLSCOPE_BIN") ? std::getenv("STALLSCOPE_BIN") : STALLSCOPE_BINARY;
    const std::string node = std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nodes/dgx-h100";

    // ---- one real recording, as the helper writes it ----
    Roots roots;
    roots.procfs = node + "/proc";
    roots.sysfs = node + "/sys";
    roots.dev = "/nonexistent";
    roots.nvidia_smi = "/nonexistent/nvidia-smi";
    roots.nvml_library = fs::exists(FAKE_NVML_PATH) ? FAKE_NVML_PATH : "/nonexistent/libnvidia-ml.so.1";
    setenv("STALLSCOPE_FAKE_NVML_FIXTURE", (node + "/nvml.json").c_str(), 1);
    Sampler sampler = Sampler::for_node(roots);
    Snapshot base = sampler.sample_at(1'790'000'000);
    base.context.job_id = "4242", base.context.step_id = "0", base.context.user = "alice";
    base.context.job_name = "scale";

    char tmpl[] = "/tmp/stallscope-job-scale-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string job = dir + "/stallscope-4242";
    fs::create_directory(job);
    const std::string master = dir + "/timeline.master.jsonl";
    const double gen_start = monotonic_now();
    Json verdict_doc;
    {
        std::ofstream out(master, std::ios::binary);
        const Thresholds thresholds;
        Profiler profiler(thresholds);
        cli::NodeStatsAccumulator stats;
        const Json header = timeline_header(base, 1.0, thresholds_as_pairs(thresholds));
        out << dump_line(header);
        for (long i = 0; i < samples; ++i) {
            Snapshot s = step_sample(base, static_cast<std::uint64_t>(i));
            const Profile p = profiler.observe(s);
            stats.add(s, profiler.last_rates());  // as the helper does it live
            out << dump_line(timeline_sample_line(s, p));
        }
        const StepVerdict verdict = profiler.verdict();
        Json verdict_line{{"type", "verdict"}};
        const Json fields = to_json(verdict);
        for (const auto& [k, v] : fields.items()) verdict_line[k] = v;
        out << dump_line(verdict_line);
        verdict_doc = verdict_document(header, verdict, master, {}, stats.to_json());
    }
    auto host = [](int i) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "gpu%04d", i);
        return std::string(buf);
    };
    std::size_t verdict_bytes = 0;
    for (int i = 1; i <= nodes; ++i) {
        const std::string h = host(i);
        const std::string timeline = job + "/timeline.0." + h + ".jsonl";
        if (i == nodes) {
            std::ofstream(timeline).close();  // helper died at once
            continue;
        }
        if (i == nodes - 1) {  // helper killed before its verdict: every sample, no verdict line
            const std::string text = bench::read_file(master);
            std::ofstream(timeline) << text.substr(0, text.rfind('\n', text.size() - 2) + 1);
            continue;
        }
        fs::create_hard_link(master, timeline);
        Json v = verdict_doc;
        v["host"] = h;
        v["timeline"] = timeline;
        if (i % 8 == 0)
            for (auto& g : v["node_stats"]["gpus"])
                if (g["mean_util_pct"].is_number())
                    g["mean_util_pct"] = g["mean_util_pct"].get<double>() * 0.4;
        if (i == 2) {
            v["verdict"]["label"] = kLabelFailRisk;
            v["verdict"]["confidence"] = 0.95;
            Json reason = {{"code", "rdma_port_down"},
                           {"category", "fabric"},
                           {"severity", "critical"},
                           {"label", kLabelFailRisk},
                           {"subject", "mlx5_3/1"},
                           {"message", "mlx5_3/1 went DOWN"},
                           {"evidence", Json::object()},
                           {"first_seen", v["verdict"]["start"]},
                           {"last_seen", v["verdict"]["end"]},
                           {"samples", 10},
                           {"duration_seconds", 10},
                           {"share", 0.1}};
            v["verdict"]["reasons"].insert(v["verdict"]["reasons"].begin(), reason);
        }
        const std::string text = v.dump(2) + "\n";
        verdict_bytes += text.size();
        std::ofstream(job + "/verdict.0." + h + ".json") << text;
    }
    std::printf(
        "job dir: %d nodes x %ld samples of dgx-h100 (%zu GPUs, %zu RDMA ports); timeline %.1f MiB "
        "(%.1f KB/sample, hard-linked per node), verdict files %.1f KB each; generated in %.1f s\n",
        nodes, samples, base.gpus.size(), base.rdma.size(), fs::file_size(master) / 1048576.0,
        static_cast<double>(fs::file_size(master)) / static_cast<double>(samples) / 1000.0,
        static_cast<double>(verdict_bytes) / (nodes - 2) / 1000.0, monotonic_now() - gen_start);

    // ---- merge: what the job's writer does once per job ----
    const double rss_before = peak_rss_mib();
    const double merge_start = monotonic_now();
    const cli::JobReport report = cli::build_job_report({job});
    std::string error;
    const bool wrote = write_file_atomically(job + "/summary.json",
                                             cli::job_report_json(report).dump(2) + "\n", true, error) &&
                       write_file_atomically(job + "/summary.txt", cli::job_report_text(report), true, error);
    const std::string segment = compose_comment_segment(report.verdict, static_cast<int>(report.gpus.size()),
                                                        report.root_cause_node, job + "/summary.json");
    const double merge_s = monotonic_now() - merge_start;
    const double rss_after = peak_rss_mib();
    std::printf(
        "\nmerge (build_job_report + summary.json/.txt + comment segment): %.2f s  (goal < %.0f s: %s)%s\n",
        merge_s, kGoalSeconds, verdict_of(merge_s < kGoalSeconds), wrote ? "" : error.c_str());
    std::printf("  %s; %zu stragglers, %zu without a verdict, %zu warnings\n", report.verdict.label.c_str(),
                report.straggler_nodes.size(), report.missing_nodes.size(), report.warnings.size());
    std::printf("  comment: %s\n", segment.c_str());
    std::printf("  peak RSS %.1f MiB (%.1f MiB before the merge: +%.0f KiB per node)\n", rss_after,
                rss_before, (rss_after - rss_before) * 1024 / nodes);

    // ---- report, end to end ----
    if (fs::exists(binary)) {
        const ChildRun r = run_report(binary, job, dir + "/report.txt", false);
        const ChildRun all = run_report(binary, job, dir + "/report-all.txt", true);
        std::printf(
            "\nstallscope report DIR (exit %d): %.2f s (goal < %.0f s: %s), %zu lines (goal <= %zu: %s), "
            "peak RSS %.1f MiB\n",
            r.exit_code, r.wall, kGoalSeconds, verdict_of(r.wall < kGoalSeconds), r.lines, kGoalLines,
            verdict_of(r.lines <= kGoalLines), r.max_rss_mib);
        std::printf("stallscope report DIR --all (every node, reason, GPU and port): %.2f s, %zu lines\n",
                    all.wall, all.lines);
    } else {
        std::printf("\n(%s not built: no end-to-end report figures)\n", binary.c_str());
    }

    // ---- baseline: the old path, every timeline replayed ----
    std::vector<std::string> timelines;
    for (int i = 1; i <= baseline_nodes; ++i) timelines.push_back(job + "/timeline.0." + host(i) + ".jsonl");
    const double base_start = monotonic_now();
    const cli::JobReport replayed = cli::build_job_report(timelines);
    const double base_s = monotonic_now() - base_start;
    const double scaled = base_s * nodes / baseline_nodes;
    std::printf(
        "\nbaseline, every timeline replayed (the old merge): %d nodes in %.2f s -> %.1f s for %d nodes "
        "(%.0fx the merge from verdict files); peak RSS %.1f MiB\n",
        baseline_nodes, base_s, scaled, nodes, scaled / merge_s, peak_rss_mib());
    std::printf("  (%zu recordings, %s)\n", replayed.nodes.size(), replayed.verdict.label.c_str());
    // STALLSCOPE_BENCH_KEEP=1 keeps the job dir (to look at the report).
    if (std::getenv("STALLSCOPE_BENCH_KEEP"))
        std::printf("\njob dir kept: %s\n", job.c_str());
    else
        fs::remove_all(dir);
    return 0;
}
