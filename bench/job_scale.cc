// The job merge at cluster scale: what the job's writer does once per job (issue 12: 1 000 nodes; issue
// 37 item 6: 16 000 nodes in <= 256 MiB and < 10 s).
//
//   ninja -C build bench/job_scale && build/bench/job_scale [nodes=1000] [samples=140] [baseline_nodes=100]
//   STALLSCOPE_BASELINE_BIN=/path/to/older/stallscope build/bench/job_scale 16000   # + that build's figures
//
// Builds a finished N-node job dir in a temp dir from one real recording: `samples` samples of
// fixtures/nodes/dgx-h100 (8 GPUs from the fake libnvidia-ml when built), written as the helper writes
// them, with the verdict file the helper writes (verdict_document + NodeStatsAccumulator::to_json). Per
// host: the verdict cloned with the host renamed and its own timeline file (the merge reads a timeline
// only where the verdict is missing, so past the baseline's hosts, which get the whole recording, each
// timeline holds its header line: 16 000 whole copies would be 51 GB). Perturbations: every 8th node a
// straggler (GPU means x 0.4), node 2 faulty (rdma_port_down, FAIL_RISK), node N-1 without its verdict
// (helper killed: its timeline is replayed), node N an empty timeline.
// Then times:
//   summarize `stallscope summarize DIR` (fork/exec): the merge and summary.json/.txt as the writer runs
//             them, wall and peak RSS of a process of its own: the figures the goals are about;
//   merge     the same in process (wait_for_verdicts + build_job_report + write_job_summary + comment);
//   report    `stallscope report DIR` end to end: wall, peak RSS, line count (and --all's);
//   baselines STALLSCOPE_BASELINE_BIN's `summarize` on the same dir (its summary.json/.txt compared byte
//             for byte with ours), and the old path, every timeline replayed: build_job_report on
//             `baseline_nodes` timelines, scaled to N.
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
#include "helper/job_report_text.h"
#include "libstallscope/job/job_finish.h"
#include "libstallscope/job/job_report.h"
#include "libstallscope/job/node_stats.h"
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
constexpr double kGoalMiB = 256;  // at 16 000 nodes (issue 37)

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

// `binary command dir [option]`, stdout into `out`.
ChildRun run_child(const std::string& binary, const char* command, const std::string& dir,
                   const std::string& out, const char* option = nullptr) {
    ChildRun r;
    const double start = monotonic_now();
    const pid_t pid = fork();
    if (pid == 0) {
        if (FILE* f = std::fopen(out.c_str(), "w")) dup2(fileno(f), STDOUT_FILENO);
        if (FILE* null = std::fopen("/dev/null", "w")) dup2(fileno(null), STDERR_FILENO);
        execl(binary.c_str(), binary.c_str(), command, dir.c_str(), option, static_cast<char*>(nullptr));
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

// `summarize` by `binary`; its summary.json/.txt are moved to `<dir>/../<tag>.summary.*`.
ChildRun run_summarize(const std::string& binary, const std::string& dir, const std::string& tag) {
    const ChildRun r = run_child(binary, "summarize", dir, dir + "/../" + tag + ".out");
    for (const char* name : {"summary.json", "summary.txt"})
        if (fs::exists(dir + "/" + name)) fs::rename(dir + "/" + name, dir + "/../" + tag + "." + name);
    return r;
}

// Block by block: two 16 000-node summaries read whole would be 220 MB in this process.
bool same_files(const std::string& a, const std::string& b) {
    std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
    if (!x || !y) return false;
    std::vector<char> p(1 << 16), q(1 << 16);
    for (;;) {
        x.read(p.data(), static_cast<std::streamsize>(p.size()));
        y.read(q.data(), static_cast<std::streamsize>(q.size()));
        if (x.gcount() != y.gcount() || !std::equal(p.begin(), p.begin() + x.gcount(), q.begin()))
            return false;
        if (x.gcount() == 0) return true;
    }
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
    std::string header_line;
    {
        std::ofstream out(master, std::ios::binary);
        const Thresholds thresholds;
        Profiler profiler(thresholds);
        NodeStatsAccumulator stats;
        const Json header = timeline_header(base, 1.0, thresholds_as_pairs(thresholds));
        header_line = dump_line(header);
        out << header_line;
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
        if (i <= baseline_nodes)
            fs::copy_file(master, timeline);
        else
            std::ofstream(timeline) << header_line;
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
        "(%.1f KB/sample; whole on %d nodes, its header line on the others), verdict files %.1f KB each; "
        "generated in %.1f s\n",
        nodes, samples, base.gpus.size(), base.rdma.size(), fs::file_size(master) / 1048576.0,
        static_cast<double>(fs::file_size(master)) / static_cast<double>(samples) / 1000.0, baseline_nodes,
        static_cast<double>(verdict_bytes) / (nodes - 2) / 1000.0, monotonic_now() - gen_start);

    // ---- merge: what the job's writer does once per job, in process (first: the figures below fork) ----
    const double rss_before = peak_rss_mib();
    const double merge_start = monotonic_now();
    const std::vector<std::string> missing = wait_for_verdicts(job, 0);
    JobReportOptions ended;
    ended.job_ended = true;
    const JobReport report = build_job_report({job}, ended);
    std::string error;
    const bool wrote = write_job_summary(job, report, cli::job_summary_text, error);
    const std::string segment =
        compose_job_comment_segment(job_comment_facts(report, missing, job + "/summary.json"));
    const double merge_s = monotonic_now() - merge_start;
    const double rss_after = peak_rss_mib();
    std::printf(
        "\nmerge in process (build_job_report + summary.json/.txt + comment segment): %.2f s  (goal < %.0f "
        "s: "
        "%s)%s\n",
        merge_s, kGoalSeconds, verdict_of(merge_s < kGoalSeconds), wrote ? "" : error.c_str());
    std::printf("  %s; %zu stragglers, %zu without a verdict, %zu warnings\n", report.verdict.label.c_str(),
                report.straggler_nodes.size(), report.missing_nodes.size(), report.warnings.size());
    std::printf("  comment: %s\n", segment.c_str());
    std::printf("  peak RSS %.1f MiB (%.1f MiB before the merge: +%.0f KiB per node)\n", rss_after,
                rss_before, (rss_after - rss_before) * 1024 / nodes);

    // ---- summarize: the writer's merge in a process of its own (the goals' figures), against the
    // baseline build's on the same dir; each twice, interleaved, best wall (other builds share the VM) ----
    const char* baseline_binary = std::getenv("STALLSCOPE_BASELINE_BIN");
    if (fs::exists(binary)) {
        ChildRun ours, theirs;
        auto keep_best = [](ChildRun& best, const ChildRun& r, int round) {
            if (round == 0 || r.wall < best.wall) best.wall = r.wall;
            best.max_rss_mib = std::max(best.max_rss_mib, r.max_rss_mib);
            best.exit_code = std::max(best.exit_code, r.exit_code);
        };
        for (int round = 0; round < 2; ++round) {
            keep_best(ours, run_summarize(binary, job, "ours"), round);
            if (baseline_binary) keep_best(theirs, run_summarize(baseline_binary, job, "baseline"), round);
        }
        std::printf(
            "\nstallscope summarize DIR (exit %d; best of 2): %.2f s (goal < %.0f s: %s), peak RSS %.1f MiB "
            "(goal <= %.0f MiB at 16 000 nodes: %s)\n",
            ours.exit_code, ours.wall, kGoalSeconds, verdict_of(ours.wall < kGoalSeconds), ours.max_rss_mib,
            kGoalMiB, verdict_of(ours.max_rss_mib <= kGoalMiB));
        if (baseline_binary) {
            const bool same = same_files(dir + "/ours.summary.json", dir + "/baseline.summary.json") &&
                              same_files(dir + "/ours.summary.txt", dir + "/baseline.summary.txt");
            std::printf(
                "baseline %s summarize (exit %d, same minutes): %.2f s, peak RSS %.1f MiB -> %.2fx the time, "
                "%.2fx the memory; summary.json and .txt byte for byte the same: %s\n",
                baseline_binary, theirs.exit_code, theirs.wall, theirs.max_rss_mib, ours.wall / theirs.wall,
                ours.max_rss_mib / theirs.max_rss_mib, same ? "yes" : "NO");
        } else {
            std::printf("(no STALLSCOPE_BASELINE_BIN: no older build's summarize to compare with)\n");
        }
    }

    // ---- report, end to end ----
    if (fs::exists(binary)) {
        const ChildRun r = run_child(binary, "report", job, dir + "/report.txt");
        const ChildRun all = run_child(binary, "report", job, dir + "/report-all.txt", "--all");
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
    const JobReport replayed = build_job_report(timelines);
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
