// How fast `stallscope replay` re-profiles a recorded timeline (ARCHITECTURE.md "Performance targets":
// >= 1 M samples/s; 30 days at 1 s is 2.6 M samples).
//
//   ninja -C build-bench bench/replay_throughput && build-bench/bench/replay_throughput [samples] [node-dir]
//   (default 100 000 samples of fixtures/nodes/vm with 2 GPUs from the fake NVML, if built)
//
// The timeline is generated with the library the helper uses: one real sample of the fixture node, then
// `samples` copies 1 s apart whose traffic counters grow (so rates are not all zero), each written as the
// helper writes it (timeline_sample_line: snapshot + its profile), plus the header and the verdict line.
// Then:
//   1. `stallscope replay FILE` end to end (fork/exec): wall, CPU, peak RSS -> samples/s;
//   2. the same work in this process, split: JSON text -> Json (nlohmann parse), Json -> Snapshot
//      (snapshot_from_json), Profiler::observe per sample (rates + rules), Profiler::verdict().
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/sampler.h"
#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/timeline.h"

using namespace stallscope;

namespace {

double monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

void grow(Counter& c, std::uint64_t by) {
    if (c) *c += by;
}

// Sample i of the synthetic step: traffic counters move every second, error counters stay put.
Snapshot step_sample(const Snapshot& base, std::uint64_t i) {
    Snapshot s = base;
    s.time = base.time + static_cast<double>(i);
    for (auto& iface : s.interfaces) {
        grow(iface.rx_bytes, i * 1'000'000);
        grow(iface.tx_bytes, i * 900'000);
        grow(iface.rx_packets, i * 1'000);
        grow(iface.tx_packets, i * 900);
    }
    for (auto& port : s.rdma) {
        for (auto* map : {&port.counters, &port.hw_counters})
            for (auto& [name, value] : *map)
                if (name.find("packets") != std::string::npos || name.find("_data") != std::string::npos)
                    grow(value, i * 10'000);
        grow(port.rx_bytes, i * 40'000);
        grow(port.tx_bytes, i * 40'000);
    }
    for (auto& gpu : s.gpus) grow(gpu.energy_mj, i * 300'000);
    return s;
}

std::string dump_line(const Json& line) {
    return line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";  // as TimelineWriter writes
}

struct ChildRun {
    int exit_code = -1;
    double wall = 0, cpu = 0;
    long max_rss_kib = 0;
};

ChildRun run_replay(const std::string& binary, const std::string& timeline) {
    ChildRun r;
    const double start = monotonic_now();
    const pid_t pid = fork();
    if (pid == 0) {
        if (FILE* null = std::fopen("/dev/null", "w")) dup2(fileno(null), STDOUT_FILENO);
        execl(binary.c_str(), binary.c_str(), "replay", timeline.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    r.wall = monotonic_now() - start;
    r.cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    r.max_rss_kib = usage.ru_maxrss;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    const long samples = argc > 1 ? std::atol(argv[1]) : 100'000;
    const std::string node = argc > 2 ? argv[2] : std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nodes/vm";
    const std::string binary =
        std::getenv("STALLSCOPE_BIN") ? std::getenv("STALLSCOPE_BIN") : STALLSCOPE_BINARY;
    const std::string fake_nvml = FAKE_NVML_PATH;
    const std::string nvml_fixture = std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nvml/throttled.json";
    if (samples < 2) return std::fprintf(stderr, "replay_throughput: samples must be >= 2\n"), 2;

    // ---- generate ----
    Roots roots;
    roots.procfs = node + "/proc";
    roots.sysfs = node + "/sys";
    if (exists(node + "/ethtool")) roots.ethtool = node + "/ethtool";
    roots.dev = "/nonexistent";
    roots.nvidia_smi = "/nonexistent/nvidia-smi";
    roots.nvml_library = exists(fake_nvml) ? fake_nvml : "/nonexistent/libnvidia-ml.so.1";
    setenv("STALLSCOPE_FAKE_NVML_FIXTURE", nvml_fixture.c_str(), 1);
    Sampler sampler = Sampler::for_node(roots);
    const Snapshot base = sampler.sample_at(1'790'000'000);

    // STALLSCOPE_BENCH_TIMELINE=FILE keeps the generated timeline there (for perf / callgrind).
    const char* keep = std::getenv("STALLSCOPE_BENCH_TIMELINE");
    char tmpl[] = "/tmp/stallscope-replay-XXXXXX";
    const std::string dir = keep ? "" : mkdtemp(tmpl);
    const std::string path = keep ? std::string(keep) : dir + "/timeline.0.bench.jsonl";
    const double gen_start = monotonic_now();
    {
        std::ofstream out(path, std::ios::binary);
        const Thresholds thresholds;
        Profiler profiler(thresholds);
        out << dump_line(timeline_header(base, 1.0, thresholds_as_pairs(thresholds)));
        for (long i = 0; i < samples; ++i) {
            const Snapshot s = step_sample(base, static_cast<std::uint64_t>(i));
            out << dump_line(timeline_sample_line(s, profiler.observe(s)));
        }
        Json verdict_line{{"type", "verdict"}};
        const Json fields = to_json(profiler.verdict());
        for (const auto& [k, v] : fields.items()) verdict_line[k] = v;
        out << dump_line(verdict_line);
    }
    const double gen_seconds = monotonic_now() - gen_start;
    std::ifstream sizer(path, std::ios::binary | std::ios::ate);
    const double bytes = static_cast<double>(sizer.tellg());
    std::printf(
        "timeline: %ld samples of %s (%zu GPUs, %zu interfaces, %zu RDMA ports), %.1f MiB, %.0f B/line; "
        "generated in %.1f s\n",
        samples, node.c_str(), base.gpus.size(), base.interfaces.size(), base.rdma.size(), bytes / 1048576,
        bytes / static_cast<double>(samples), gen_seconds);

    // ---- 1. the CLI, end to end ----
    if (exists(binary)) {
        const ChildRun r = run_replay(binary, path);
        std::printf("\nstallscope replay (end to end, exit %d)\n", r.exit_code);
        std::printf("  wall %.2f s, CPU %.2f s, peak RSS %.1f MiB\n", r.wall, r.cpu, r.max_rss_kib / 1024.0);
        std::printf(
            "  %.0f samples/s of wall, %.0f per CPU second, %.1f MiB/s of timeline (target >= 1 000 000 "
            "samples/s: %.0fx short)\n",
            samples / r.wall, samples / r.cpu, bytes / 1048576 / r.wall, 1e6 / (samples / r.wall));
        std::printf(
            "  verdict after %.2f s; 2.6 M samples (30 days at 1 s) extrapolated: %.0f s (peak RSS %.0f KiB "
            "per "
            "1000 samples here: ~0 when replay streams)\n",
            r.wall, r.wall * 2.6e6 / static_cast<double>(samples),
            static_cast<double>(r.max_rss_kib) * 1000 / static_cast<double>(samples));
    } else {
        std::printf("\n(%s not built: in-process figures only)\n", binary.c_str());
    }

    // ---- 2. in process, split by stage ----
    double parse_s = 0, convert_s = 0;
    {
        std::ifstream in(path, std::ios::binary);
        std::string text;
        std::vector<std::string> problems;
        while (std::getline(in, text)) {
            const double t0 = monotonic_now();
            const Json line = Json::parse(text, nullptr, false);
            const double t1 = monotonic_now();
            if (line.is_object() && line.value("type", "") == "sample")
                (void)snapshot_from_json(line, problems);
            convert_s += monotonic_now() - t1;
            parse_s += t1 - t0;
        }
    }
    const double read_start = monotonic_now();
    TimelineContents contents;
    std::string error;
    read_timeline(path, contents, error);
    const double read_s = monotonic_now() - read_start;
    Profiler profiler;
    const double observe_start = monotonic_now();
    for (const auto& s : contents.samples) profiler.observe(s);
    const double observe_s = monotonic_now() - observe_start;
    const double verdict_start = monotonic_now();
    const StepVerdict verdict = profiler.verdict();
    const double verdict_s = monotonic_now() - verdict_start;
    const double total = read_s + observe_s + verdict_s;
    std::printf("\nin process (label %s)\n", verdict.label.c_str());
    std::printf(
        "  read_timeline      %6.2f s  %8.0f samples/s  (of which JSON parse %.2f s, snapshot_from_json %.2f "
        "s)\n",
        read_s, samples / read_s, parse_s, convert_s);
    std::printf("  Profiler::observe  %6.2f s  %8.0f samples/s  (rates + rules per sample)\n", observe_s,
                samples / observe_s);
    std::printf("  Profiler::verdict  %6.3f s\n", verdict_s);
    std::printf("  total              %6.2f s  %8.0f samples/s\n", total, samples / total);
    if (!keep) {
        std::remove(path.c_str());
        rmdir(dir.c_str());
    }
    return 0;
}
