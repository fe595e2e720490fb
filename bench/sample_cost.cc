// Per-sample cost of stallscope's node sources on a big-node tree, against (a) the raw pread floor for the
// same file set and (b) Debian's prometheus-node-exporter scraping the same tree, all in one run
// (ARCHITECTURE.md "Performance targets": <= 1.5x the floor; node_exporter >= 5x dearer, the issue asks 10x).
//
//   ninja -C build bench/sample_cost tests/fake_nvml/libnvidia-ml.so.1 && build/bench/sample_cost
//   build/bench/sample_cost [--iterations N] [--scrapes N] [--ports-per-hca N] [--netdevs N]
//                           [--node-exporter PATH | --no-node-exporter] [--keep-tree] [fixture-node-dir]
//
// Tree. With no fixture-node-dir the bench builds the big node in a mkdtemp dir (removed at exit): a copy
// of fixtures/nodes/dgx-h100 (8 HCAs, 10 netdevs, ~500 files) whose 8 HCAs get a second port (a copy of
// port 1's 55 files: 16 IB ports) and whose /proc/net/dev gets rows up to 16 netdevs: 937 files, of which
// stallscope's sources read 808 per sample (node_exporter 1.5 opens ~440: it skips hw_counters/). No
// sys/class/net is added: neither stallscope nor the node_exporter collectors used here read it (both take
// netdevs from /proc/net/dev). A fixture-node-dir is used as it is.
//
// stallscope: the procfs, ethtool and infiniband sources (Sampler::sample_at) on that tree; the fake
// libnvidia-ml (8 GPUs from the tree's nvml.json) is timed on its own, because a real NVML's cost is the
// driver's and node_exporter reads no GPUs. CPU from CLOCK_PROCESS_CPUTIME_ID. Samples are recycled as
// the helper does (Sampler::sample(Snapshot&&)), and operator new calls per sample are counted
// (alloc_count.cc): on this tree ~30 of them are the ethtool source parsing its fixture files
// (STALLSCOPE_ETHTOOL_ROOT), a path production does not take (it asks the kernel by ioctl).
//
// Floor: every file those sources read, opened once and pread into a stack buffer per sample, no parsing.
//
// node_exporter: --path.procfs/--path.sysfs on the tree, --collector.disable-defaults with infiniband,
// netdev (--no-collector.netdev.netlink: 1.5's default netlink path reads the host's interfaces, not the
// tree), meminfo, loadavg, pressure and vmstat; on 127.0.0.1 at a free port. Scraped back to back over one
// keep-alive HTTP/1.1 connection (GET /metrics, plain text; a gzip round as Prometheus asks for is printed
// too). Its CPU per scrape is utime+stime from /proc/<pid>/stat (clock ticks) over >= 200 scrapes and
// >= 200 ticks after a warm-up, nothing subtracted (its idle CPU is printed, not removed).
//
// The three are interleaved over two rounds and each figure is the lower of its two rounds.
//
// Paced: the periodic --json CLI (4) sleeps 10 ms between samples, so it pays cold caches at each wake-up;
// (2b) and (3b) are the floor and node_exporter at that cadence, and the CLI target is judged on
// (3b) / (4), the same condition. (3) / (4) is printed too.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench/alloc_count.h"
#include "bench/bench_util.h"
#include "bench/big_node.h"
#include "bench/cli_cost.h"
#include "bench/motion.h"
#include "bench/node_exporter_probe.h"
#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/sampler.h"
#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/timeline.h"

#ifndef FAKE_NVML_PATH
#define FAKE_NVML_PATH ""
#endif

using namespace stallscope;
using namespace stallscope::bench;
namespace fs = std::filesystem;

namespace {

// The files the procfs and infiniband sources read each sample.
std::vector<std::string> sampled_files(const std::string& proc, const std::string& sys) {
    std::vector<std::string> files;
    for (const char* f : {"loadavg", "meminfo", "stat", "vmstat", "pressure/cpu", "pressure/io",
                          "pressure/memory", "net/dev"})
        files.push_back(proc + "/" + f);
    const std::string ib = sys + "/class/infiniband";
    for (const auto& dev : list_dir(ib))
        for (const auto& port : list_dir(ib + "/" + dev + "/ports")) {
            const std::string p = ib + "/" + dev + "/ports/" + port;
            for (const char* f : {"state", "phys_state", "rate", "link_layer"}) files.push_back(p + "/" + f);
            for (const char* sub : {"counters", "hw_counters"})
                for (const auto& c : list_dir(p + "/" + sub)) files.push_back(p + "/" + sub + "/" + c);
        }
    return files;
}

// ---------------------------------------------------------------------------------------------------
// The big-node tree.

// A mkdtemp dir holding the generated tree (<work>/node) and node_exporter's log; removed at exit.
struct WorkDir {
    std::string path;
    bool keep = false;
    ~WorkDir() {
        if (!keep && !path.empty()) {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    }
};

// ---------------------------------------------------------------------------------------------------
// stallscope and the floor.

Cost sampler_cost(Sampler& sampler, int iterations, double& clock) {
    const long long reads = read_syscalls("self");
    const auto news = operator_new_calls();
    const double start = cpu_seconds();
    Snapshot recycled;  // as the helper samples: the previous sample's maps are reused
    for (int i = 0; i < iterations; ++i) recycled = sampler.sample_at(clock += 1.0, std::move(recycled));
    Cost cost;
    cost.cpu = (cpu_seconds() - start) / iterations;
    cost.news = static_cast<double>(operator_new_calls() - news) / iterations;
    if (reads >= 0) cost.reads = static_cast<double>(read_syscalls("self") - reads) / iterations;
    return cost;
}

// The helper's whole per-sample path, as `record` runs it: sources -> events -> Profiler::observe (deltas,
// rates, rules) -> the timeline v2 line (diff, zstd, write(2)) into a file; with `motion`, the counters
// move every sample.
Cost helper_path_cost(Sampler& sampler, Profiler& profiler, TimelineWriter& timeline, int iterations,
                      double& clock, CounterMotion* motion) {
    const long long reads = read_syscalls("self");
    std::string error;
    const auto news = operator_new_calls();
    const double start = cpu_seconds();
    Snapshot snapshot;  // the previous sample, as observe() hands it back: the sources reuse it
    for (int i = 0; i < iterations; ++i) {
        snapshot = sampler.sample_at(clock += 1.0, std::move(snapshot));
        if (motion) motion->apply(snapshot);
        for (const auto& e : events_between(profiler.last_sample(), snapshot)) timeline.append(e, error);
        const Profile profile = profiler.observe(std::move(snapshot));
        timeline.append_sample(*profiler.last_sample(), profile, error);
    }
    Cost cost;
    cost.cpu = (cpu_seconds() - start) / iterations;
    cost.news = static_cast<double>(operator_new_calls() - news) / iterations;
    if (reads >= 0) cost.reads = static_cast<double>(read_syscalls("self") - reads) / iterations;
    return cost;
}

// CounterMotion::apply alone, on one snapshot (its share of the moving whole path).
double motion_cost(const Snapshot& first, int iterations) {
    CounterMotion motion;
    Snapshot s = first;
    const double start = cpu_seconds();
    for (int i = 0; i < iterations; ++i) motion.apply(s);
    return (cpu_seconds() - start) / iterations;
}

struct Options {
    std::string node;
    int iterations = 2000;
    int scrapes = 200;
    int ports_per_hca = 2;
    int netdevs = 16;
    std::string node_exporter = kNodeExporter;
    bool run_node_exporter = true;
    bool keep_tree = false;
};

int usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--iterations N] [--scrapes N] [--ports-per-hca N] [--netdevs N]\n"
                 "          [--node-exporter PATH | --no-node-exporter] [--keep-tree] [fixture-node-dir "
                 "[iterations]]\n",
                 argv0);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if (a == "--iterations" && (v = value())) {
            opt.iterations = std::atoi(v);
        } else if (a == "--scrapes" && (v = value())) {
            opt.scrapes = std::atoi(v);
        } else if (a == "--ports-per-hca" && (v = value())) {
            opt.ports_per_hca = std::atoi(v);
        } else if (a == "--netdevs" && (v = value())) {
            opt.netdevs = std::atoi(v);
        } else if (a == "--node-exporter" && (v = value())) {
            opt.node_exporter = v;
        } else if (a == "--no-node-exporter") {
            opt.run_node_exporter = false;
        } else if (a == "--keep-tree") {
            opt.keep_tree = true;
        } else if (!a.empty() && a[0] != '-') {
            positional.push_back(a);
        } else {
            return usage(argv[0]);
        }
    }
    if (positional.size() > 2 || opt.iterations < 1 || opt.scrapes < 1 || opt.ports_per_hca < 1)
        return usage(argv[0]);
    if (positional.size() > 1) opt.iterations = std::atoi(positional[1].c_str());
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);

    WorkDir work;
    work.keep = opt.keep_tree;
    std::string dir = (fs::temp_directory_path() / "stallscope-sample-cost-XXXXXX").string();
    if (!mkdtemp(dir.data())) {
        std::fprintf(stderr, "mkdtemp: %s\n", std::strerror(errno));
        return 1;
    }
    work.path = dir;
    std::string tree;
    if (!positional.empty()) {
        tree = positional[0];
        std::printf("tree: %s (used as it is)\n", tree.c_str());
    } else {
        const std::string from = std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nodes/dgx-h100";
        tree = work.path + "/node";
        if (auto error = build_big_node(from, tree, opt.ports_per_hca, opt.netdevs); !error.empty()) {
            std::fprintf(stderr, "building the big-node tree: %s\n", error.c_str());
            return 1;
        }
        std::printf("tree: %s%s\n  = %s, %d port(s) per HCA, /proc/net/dev grown to %d netdevs\n",
                    tree.c_str(), opt.keep_tree ? " (kept)" : " (removed at exit)", from.c_str(),
                    opt.ports_per_hca, opt.netdevs);
    }

    Roots roots;
    roots.procfs = tree + "/proc";
    roots.sysfs = tree + "/sys";
    roots.ethtool = tree + "/ethtool";

    std::vector<std::unique_ptr<Source>> file_sources;
    file_sources.push_back(make_procfs_source(roots));
    file_sources.push_back(make_ethtool_source(roots));
    file_sources.push_back(make_infiniband_source(roots));
    Sampler files_only(std::move(file_sources));
    double clock = 0;
    const Snapshot first = files_only.sample_at(clock);  // discovery and first opens: not per-sample cost
    const auto files = sampled_files(roots.procfs, roots.sysfs);
    std::size_t counters = 0;
    for (const auto& port : first.rdma) counters += port.counters.size() + port.hw_counters.size();
    std::printf(
        "tree: %zu regular files; stallscope sees %zu netdevs, %zu IB ports (%zu counters), "
        "%zu warnings\n",
        count_regular_files(tree), first.interfaces.size(), first.rdma.size(), counters,
        first.warnings.size());

    NodeExporter exporter;
    std::string skipped;
    if (!opt.run_node_exporter) {
        skipped = "skipped: node_exporter (--no-node-exporter)";
    } else if (access(opt.node_exporter.c_str(), X_OK) != 0) {
        skipped = "skipped: node_exporter: " + opt.node_exporter + " is not installed (" +
                  std::strerror(errno) + "; Debian: apt-get install prometheus-node-exporter)";
    } else if (auto error = exporter.start(opt.node_exporter, tree, work.path + "/node_exporter.log");
               !error.empty()) {
        skipped = "skipped: node_exporter: " + error;
    }
    std::string body;
    std::size_t gzip_bytes = 0;
    if (skipped.empty()) {
        std::printf("node_exporter: %s\n", exporter.command_line().c_str());
        std::string error, encoding;
        for (int i = 0; i < kNodeExporterWarmupScrapes && skipped.empty(); ++i)
            if (auto b = exporter.scrape(false, error))
                body = std::move(*b);
            else
                skipped = "skipped: node_exporter: scrape failed: " + error;
        if (auto b = exporter.scrape(true, error, &encoding)) gzip_bytes = encoding == "gzip" ? b->size() : 0;
        if (skipped.empty()) {
            std::printf("node_exporter scrape: %zu bytes, %zu lines (gzip: %zu bytes)\n", body.size(),
                        static_cast<std::size_t>(std::count(body.begin(), body.end(), '\n')), gzip_bytes);
            if (!check_scrape(body, tree, exporter.log()))
                std::printf("  node_exporter did NOT read all of the tree: see the lines above\n");
        }
    }
    std::fflush(stdout);

    // Two interleaved rounds; each figure is the lower of its two.
    Cost floor, ours, ne, ne_gzip, path, moving, paced_floor, paced_ne;
    std::vector<Cost> floor_rounds, ours_rounds, ne_rounds, path_rounds, moving_rounds, paced_floor_rounds,
        paced_ne_rounds;
    const int paced_iterations = std::max(100, opt.iterations / 4);
    long idle = -1;
    Profiler profiler, moving_profiler;
    TimelineWriter timeline(TimelineFormat::zstd_v2), moving_timeline(TimelineFormat::zstd_v2);
    CounterMotion motion;
    {
        std::string error;
        timeline.open(work.path + "/timeline.0.bench.jsonl.zst", error);
        timeline.write_header(timeline_header(first, 1.0, {}), error);
        moving_timeline.open(work.path + "/timeline.0.moving.jsonl.zst", error);
        moving_timeline.write_header(timeline_header(first, 1.0, {}), error);
    }
    for (int round = 0; round < 2 && !g_interrupted; ++round) {
        const Cost f = floor_cost(files, opt.iterations);
        const Cost s = sampler_cost(files_only, opt.iterations, clock);
        const Cost p = helper_path_cost(files_only, profiler, timeline, opt.iterations, clock, nullptr);
        const Cost m =
            helper_path_cost(files_only, moving_profiler, moving_timeline, opt.iterations, clock, &motion);
        floor_rounds.push_back(f);
        ours_rounds.push_back(s);
        path_rounds.push_back(p);
        moving_rounds.push_back(m);
        if (round == 0 || m.cpu < moving.cpu) moving = m;
        if (round == 0 || f.cpu < floor.cpu) floor = f;
        if (round == 0 || s.cpu < ours.cpu) ours = s;
        if (round == 0 || p.cpu < path.cpu) path = p;
        const Cost pf = floor_cost(files, paced_iterations, kCliIntervalSeconds);
        paced_floor_rounds.push_back(pf);
        if (round == 0 || pf.cpu < paced_floor.cpu) paced_floor = pf;
        if (!skipped.empty()) continue;
        std::string error;
        const Cost n = exporter.measure(opt.scrapes, false, error);
        if (n.cpu < 0) {
            skipped = "skipped: node_exporter: scrape failed: " + error;
            continue;
        }
        ne_rounds.push_back(n);
        if (round == 0 || n.cpu < ne.cpu) ne = n;
        const Cost np = paced_scrape_cost(exporter, kCliIntervalSeconds, opt.scrapes, error);
        if (np.cpu < 0) {
            skipped = "skipped: node_exporter: scrape failed: " + error;
            continue;
        }
        paced_ne_rounds.push_back(np);
        if (round == 0 || np.cpu < paced_ne.cpu) paced_ne = np;
    }
    if (skipped.empty() && !g_interrupted) {
        std::string error;
        ne_gzip = exporter.measure(opt.scrapes, true, error);
        idle = exporter.idle_ticks(5);
    }

    double nvml = -1;
    std::size_t gpus = 0;
    std::string nvml_lib;
    if (const char* lib = std::getenv("STALLSCOPE_NVML_LIBRARY")) {
        nvml_lib = lib;
    } else if (access(FAKE_NVML_PATH, R_OK) == 0) {
        nvml_lib = FAKE_NVML_PATH;
        if (!std::getenv("STALLSCOPE_FAKE_NVML_FIXTURE"))
            setenv("STALLSCOPE_FAKE_NVML_FIXTURE", (tree + "/nvml.json").c_str(), 1);
    }
    if (!nvml_lib.empty() && !g_interrupted) {
        roots.nvml_library = nvml_lib;
        std::vector<std::unique_ptr<Source>> gpu;
        gpu.push_back(make_nvidia_source(roots));
        Sampler nvml_only(std::move(gpu));
        gpus = nvml_only.sample_at(clock).gpus.size();
        nvml = sampler_cost(nvml_only, std::max(1, opt.iterations / 4), clock).cpu;
    }
    exporter.stop();
    // The periodic --json CLI end to end, on the same tree (no NVML: compared with node_exporter's files).
    const char* bin_env = std::getenv("STALLSCOPE_BIN");
    const CliCost cli =
        g_interrupted ? CliCost{}
                      : cli_json_cost(bin_env ? bin_env : STALLSCOPE_BINARY, tree, 20, 20 + paced_iterations);
    if (g_interrupted) {
        std::fprintf(stderr, "interrupted\n");
        return 130;
    }

    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    auto reads = [](const Cost& c) {
        return c.reads < 0 ? std::string("n/a") : std::to_string(static_cast<long>(c.reads + 0.5));
    };
    std::printf("\n%zu files read per sample (pread floor's set), %d iterations x 2 rounds\n", floor.files,
                opt.iterations);
    auto rounds = [](const std::vector<Cost>& v) {
        std::string out;
        for (const auto& c : v) out += (out.empty() ? "" : " / ") + std::to_string(std::lround(c.cpu * 1e6));
        return out;
    };
    std::vector<Cost> cli_rounds;
    for (const double cpu : cli.rounds) cli_rounds.push_back(Cost{cpu});
    std::printf("rounds, us: stallscope %s; floor %s; node_exporter %s (each figure below: the lower)\n",
                rounds(ours_rounds).c_str(), rounds(floor_rounds).c_str(),
                ne_rounds.empty() ? "-" : rounds(ne_rounds).c_str());
    std::printf(
        "(1) stallscope file sources: %9.1f us CPU per sample   (%s read syscalls; %.1f operator new)\n",
        ours.cpu * 1e6, reads(ours).c_str(), ours.news);
    std::printf(
        "(1b) whole helper path:      %9.1f us CPU per sample   (sources + Profiler + timeline v2 "
        "line; the tree's counters static; %.1f operator new; rounds %s)\n",
        path.cpu * 1e6, path.news, rounds(path_rounds).c_str());
    const double motion_alone = motion_cost(first, opt.iterations);
    std::printf(
        "(1c) same, counters moving:  %9.1f us CPU per sample   (every netdev/RDMA byte, packet and data "
        "counter; of which the bench's motion %.1f us; %.1f operator new; rounds %s)\n",
        moving.cpu * 1e6, motion_alone * 1e6, moving.news, rounds(moving_rounds).c_str());
    std::printf("(2) pread floor:             %9.1f us CPU per sample   (%s read syscalls)\n",
                floor.cpu * 1e6, reads(floor).c_str());
    std::printf(
        "(2b) same, paced:            %9.1f us CPU per sample   (one round every %.0f ms as the CLI "
        "samples, sleeps and wake-ups counted; rounds %s)\n",
        paced_floor.cpu * 1e6, kCliIntervalSeconds * 1e3, rounds(paced_floor_rounds).c_str());
    if (!skipped.empty()) {
        std::printf("(3) node_exporter: %s\n", skipped.c_str());
    } else {
        std::printf(
            "(3) node_exporter scrape:    %9.1f us CPU per scrape   (%s read syscalls; %ld scrapes, "
            "%ld ticks of 1/%ld s)\n",
            ne.cpu * 1e6, reads(ne).c_str(), ne.count, ne.ticks, sysconf(_SC_CLK_TCK));
        std::printf(
            "(3b) same, paced:            %9.1f us CPU per scrape   (one scrape every %.0f ms, the CLI's "
            "cadence; %ld scrapes, %ld ticks; rounds %s)\n",
            paced_ne.cpu * 1e6, kCliIntervalSeconds * 1e3, paced_ne.count, paced_ne.ticks,
            rounds(paced_ne_rounds).c_str());
        std::printf("    same, gzip as Prometheus asks: %9.1f us CPU per scrape (%ld scrapes, %ld ticks)\n",
                    ne_gzip.cpu * 1e6, ne_gzip.count, ne_gzip.ticks);
        std::printf("    node_exporter idle, no scrapes: %ld ticks in 5 s (not subtracted)\n", idle);
    }
    if (cli.cpu_per_sample >= 0)
        std::printf(
            "(4) periodic --json CLI:     %9.1f us CPU per sample   (every %.0f ms; fork/exec, every source, "
            "rules, %.0f B JSON line; start-up removed; rounds %s)\n",
            cli.cpu_per_sample * 1e6, kCliIntervalSeconds * 1e3, cli.bytes_per_line,
            rounds(cli_rounds).c_str());
    else
        std::printf("(4) periodic --json CLI: %s\n", cli.error.c_str());
    if (cli.cpu_per_sample > 0)
        std::printf(
            "ratio --json CLI / paced floor: %6.2fx  (what the CLI adds to the kernel's reads at its "
            "cadence)\n",
            cli.cpu_per_sample / paced_floor.cpu);
    if (nvml >= 0)
        std::printf("    NVML source (%s, %zu GPUs): %.1f us CPU per sample (not in the ratios)\n",
                    nvml_lib.c_str(), gpus, nvml * 1e6);
    std::printf("ratio stallscope / floor:            %6.2fx  (sources only)\n", ours.cpu / floor.cpu);
    std::printf("ratio whole helper path / floor:     %6.2fx  (target <= 1.5x; counters static)\n",
                path.cpu / floor.cpu);
    std::printf(
        "ratio same, counters moving / floor: %6.2fx  (target <= 1.5x; the bench's motion left out)\n",
        (moving.cpu - motion_alone) / floor.cpu);
    if (skipped.empty()) {
        std::printf(
            "ratio node_exporter / stallscope:    %6.2fx  (ARCHITECTURE target >= 5x, issue >= 10x)\n",
            ne.cpu / ours.cpu);
        std::printf("ratio node_exporter / floor:         %6.2fx\n", ne.cpu / floor.cpu);
        // Both ratios; the target is judged on the paced one: the CLI and node_exporter at one cadence.
        if (cli.cpu_per_sample > 0) {
            std::printf(
                "ratio node_exporter paced / --json CLI: %6.2fx  (issue target >= 5x, judged here: "
                "both every %.0f ms)\n",
                paced_ne.cpu / cli.cpu_per_sample, kCliIntervalSeconds * 1e3);
            std::printf(
                "ratio node_exporter back to back / --json CLI: %6.2fx  (node_exporter hot, the CLI "
                "paced: not the same condition)\n",
                ne.cpu / cli.cpu_per_sample);
        }
        if (nvml >= 0)
            std::printf("ratio node_exporter / (stallscope + NVML source): %.2fx\n",
                        ne.cpu / (ours.cpu + nvml));
    }
    std::printf("peak RSS (this process):             %6.1f MiB\n",
                static_cast<double>(ru.ru_maxrss) / 1024.0);
    return 0;
}
