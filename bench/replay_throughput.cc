// Timeline size and how fast `stallscope replay` re-profiles a recording, v1 (JSON lines) against v2
// (zstd change records), same samples, same run (ARCHITECTURE.md "Performance targets": <= 512 B per
// sample on dgx-h100 with moving counters; replay >= 1 M samples/s on vm, >= 200 k/s on dgx-h100).
//
//   ninja -C build bench/replay_throughput && build/bench/replay_throughput [samples] [node-dir] [--sick]
//   (default 20 000 samples of fixtures/nodes/vm; the node's nvml.json, or fixtures/nvml/throttled.json,
//   through the fake NVML when it is built; --sick: bench::make_sick on every sample, so findings fire
//   every sample as on a node sick all day: the dearer case for replay)
//
// The timeline is generated with the library the helper uses: one real sample of the fixture node, then
// `samples` samples 1 s apart in which traffic moves on every interface, RDMA port and GPU (counters grow
// by a rate with +-10 % noise, GPU utilization/power/temperature/clock/memory wander), each written by
// TimelineWriter as the helper writes it, plus the header and the verdict line. Then for each format:
//   1. bytes per sample, and a Prometheus-style reference (1.3 B x numeric series of the sample);
//   2. `stallscope replay FILE` end to end (fork/exec): wall, CPU, peak RSS -> samples per CPU second;
//   3. in a child of this process: visit_timeline alone (read + decompress + parse + the snapshot rebuilt;
//      a v2 reader lends it, v1 hands over a new one), and the Profiler (rates + rules + the verdict)
//      alone, called as replay calls it;
//   4. the v2 format's floor: the file decompressed in one zstd stream and every line parsed (binary
//      records as binary, JSON lines by simdjson),
//      nothing applied: what any replay of this format costs at least, against the goals' budgets.
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <simdjson.h>
#include <zstd.h>

#include "bench/motion.h"
#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/sampler.h"
#include "libstallscope/timeline/binary_record.h"
#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/plain_record.h"
#include "libstallscope/timeline/timeline.h"

using namespace stallscope;
using stallscope::bench::Motion;
using stallscope::bench::step_sample;

bool g_sick = false;  // --sick: bench::make_sick after every step_sample

namespace {

double process_cpu() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

// Numeric leaves of the sample: what Prometheus would store as series.
std::size_t numeric_series(const Json& j) {
    if (j.is_number()) return 1;
    std::size_t n = 0;
    if (j.is_structured())
        for (const auto& child : j) n += numeric_series(child);
    return n;
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

struct Format {
    TimelineFormat format;
    const char* name;
    std::string path;
    double bytes = 0;
};

// Writes the timeline; returns the CPU seconds spent in TimelineWriter::append_sample.
double write_timeline(const Format& f, const Snapshot& base, long samples) {
    TimelineWriter w(f.format);
    std::string error;
    if (!w.open(f.path, error)) std::fprintf(stderr, "%s\n", error.c_str()), std::exit(1);
    const Thresholds thresholds;
    Profiler profiler(thresholds);
    w.write_header(timeline_header(base, 1.0, thresholds_as_pairs(thresholds)), error);
    Snapshot s = base;
    Motion motion;
    double writing = 0;
    for (long i = 0; i < samples; ++i) {
        step_sample(s, motion);
        if (g_sick) bench::make_sick(s, motion);
        const Profile profile = profiler.observe(s);
        const double t0 = process_cpu();
        w.append_sample(s, profile, error);
        writing += process_cpu() - t0;
    }
    Json verdict_line{{"type", "verdict"}};
    const Json fields = to_json(profiler.verdict());
    for (const auto& [k, v] : fields.items()) verdict_line[k] = v;
    w.append(verdict_line, error);
    return writing;
}

// `measure()` run in a forked child, its (trivially copyable) result sent back through a pipe; `failed`
// when the child cannot start or dies before answering.
template <class T, class F>
T in_child(F measure, T failed = T{}) {
    int fds[2];
    if (pipe(fds) != 0) return failed;
    const pid_t pid = fork();
    if (pid == 0) {
        const T result = measure();
        [[maybe_unused]] ssize_t n = write(fds[1], &result, sizeof result);
        _exit(0);
    }
    ::close(fds[1]);
    T result = failed;
    if (pid < 0 || read(fds[0], &result, sizeof result) != sizeof result) result = failed;
    ::close(fds[0]);
    if (pid > 0) waitpid(pid, nullptr, 0);
    return result;
}

// In a child process, so that this one stays small: a child forked later for `stallscope replay` counts
// its parent's resident pages in its peak RSS (exec keeps the high-water mark).
double write_timeline_in_child(const Format& f, const Snapshot& base, long samples) {
    return in_child<double>([&] { return write_timeline(f, base, samples); }, -1.0);
}

// In a child of this small process, so one format's freed samples (and glibc trimming the heap after
// them) do not make the next format's reads page-fault: reading alone (a v2 reader lends its kept sample:
// nothing copied), then the profiler on the samples as they are read, called as replay calls it
// (observe_view_for_verdict: the step verdict, no per-sample Profile), less the reading. Samples per CPU
// second of each.
struct InProcess {
    double read_rate = 0, profiler_rate = 0;
};

InProcess measure_in_child(const Format& f) {
    return in_child<InProcess>([&] {
        struct Count final : TimelineVisitor {
            std::size_t count = 0;
            void sample(Snapshot&&) override { ++count; }
            void sample_view(const Snapshot&) override { ++count; }
        } counted;
        std::vector<std::string> warnings;
        std::string error;
        const double r0 = process_cpu();
        visit_timeline(f.path, counted, warnings, error);
        InProcess m;
        m.read_rate = static_cast<double>(counted.count) / (process_cpu() - r0);
        // The profiler as replay calls it, on the sample the reader lends (v2: one snapshot updated in
        // place, warm in the cache); its cost is this pass less the reading-alone pass above. (Keeping
        // 20 000 whole samples to profile them apart, as this did, made it look dearer than the replay.)
        struct Profiled final : TimelineVisitor {
            Profiler profiler;
            std::size_t count = 0;
            void sample(Snapshot&& s) override { sample_view(s); }
            void sample_view(const Snapshot& s) override { sample_lent(s, {}); }
            void sample_lent(const Snapshot& s, SnapshotShape shape) override {
                profiler.observe_view_for_verdict(s, shape);  // with the reader's promise, as replay
                ++count;
            }
        } profiled;
        const double o0 = process_cpu();
        visit_timeline(f.path, profiled, warnings, error);
        const double profiler_cpu = (process_cpu() - o0) - static_cast<double>(profiled.count) / m.read_rate;
        m.profiler_rate = profiler_cpu > 0 ? static_cast<double>(profiled.count) / profiler_cpu : 0;
        return m;
    });
}

// What the v2 format itself costs before a sample is applied, rates computed or a rule run: the whole file
// decompressed in one stream (as `zstdcat`: no stop after every block, which the reader makes so a
// damaged block cannot take the lines before it), then every decompressed line parsed as the reader parses
// it (a binary record by binary_record.h, a JSON plain "a"/"g" record by simdjson On Demand,
// plain_record.h; the DOM for the rest). CPU
// microseconds per sample of each, in a child (the text is held in memory).
struct FormatFloor {
    double zstd_us = 0, parse_us = 0;
};

FormatFloor measure_floor_in_child(const Format& f, long samples) {
    return in_child<FormatFloor>([&] {
        std::ifstream file(f.path, std::ios::binary);
        const std::string packed((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        std::string text;
        std::vector<char> chunk(ZSTD_DStreamOutSize());
        ZSTD_DCtx* zstd = ZSTD_createDCtx();
        // Timed: decompressing into one reused chunk (as a streaming reader does); then, untimed, the
        // same again kept whole for the parse.
        const auto decompress = [&](std::string* keep) {
            ZSTD_DCtx_reset(zstd, ZSTD_reset_session_only);
            ZSTD_inBuffer in{packed.data(), packed.size(), 0};
            while (in.pos < in.size) {
                ZSTD_outBuffer out{chunk.data(), chunk.size(), 0};
                if (ZSTD_isError(ZSTD_decompressStream(zstd, &out, &in))) break;
                if (keep) keep->append(chunk.data(), out.pos);
            }
        };
        FormatFloor m;
        const double z0 = process_cpu();
        decompress(nullptr);
        m.zstd_us = (process_cpu() - z0) / static_cast<double>(samples) * 1e6;
        decompress(&text);
        ZSTD_freeDCtx(zstd);
        simdjson::dom::parser parser;
        simdjson::ondemand::parser plain_parser;
        PlainRecord record;
        std::size_t parsed = 0;
        const simdjson::padded_string padded(text);  // one padded copy: every line may be read past its end
        const char* data = padded.data();
        const double p0 = process_cpu();
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t nl = std::min(text.find('\n', at), text.size());
            simdjson::dom::element doc;
            const std::string_view line(data + at, nl - at);
            if ((!line.empty() && line.front() == kBinaryRecordMarker && read_binary_record(line, record)) ||
                read_plain_record(plain_parser, line, simdjson::SIMDJSON_PADDING, record) ||
                parser.parse(data + at, nl - at, false).get(doc) == simdjson::SUCCESS)
                ++parsed;
            at = nl + 1;
        }
        m.parse_us = (process_cpu() - p0) / static_cast<double>(samples) * 1e6;
        if (parsed < static_cast<std::size_t>(samples)) m = {};  // not the file the bench wrote
        return m;
    });
}

double file_size(const std::string& path) {
    std::ifstream sizer(path, std::ios::binary | std::ios::ate);
    return static_cast<double>(sizer.tellg());
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--sick")
            g_sick = true;
        else
            args.emplace_back(argv[i]);
    }
    const long samples = args.size() > 0 ? std::atol(args[0].c_str()) : 20'000;
    const std::string node =
        args.size() > 1 ? args[1] : std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nodes/vm";
    const std::string binary =
        std::getenv("STALLSCOPE_BIN") ? std::getenv("STALLSCOPE_BIN") : STALLSCOPE_BINARY;
    const std::string fake_nvml = FAKE_NVML_PATH;
    const std::string nvml_fixture =
        exists(node + "/nvml.json") ? node + "/nvml.json"
                                    : std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nvml/throttled.json";
    if (samples < 2) return std::fprintf(stderr, "replay_throughput: samples must be >= 2\n"), 2;

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
    const std::size_t series = numeric_series(to_json(base));
    double entropy_bytes = 0;
    {
        Snapshot probe = base;
        Motion motion;
        for (int i = 0; i < 10; ++i) {
            step_sample(probe, motion);
            if (g_sick) bench::make_sick(probe, motion);
        }
        entropy_bytes = motion.bits / 10 / 8;
    }

    char tmpl[] = "/tmp/stallscope-replay-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    Format formats[] = {{TimelineFormat::jsonl_v1, "v1 .jsonl", dir + "/timeline.0.bench.jsonl"},
                        {TimelineFormat::zstd_v2, "v2 .jsonl.zst", dir + "/timeline.0.bench.jsonl.zst"}};
    std::printf(
        "%ld samples of %s (%zu GPUs, %zu interfaces, %zu RDMA ports, %zu numeric series), 1 s apart, "
        "traffic moving on every interface, port and GPU%s\n\n",
        samples, node.c_str(), base.gpus.size(), base.interfaces.size(), base.rdma.size(), series,
        g_sick ? "; sick (--sick): congestion on every RDMA port but the last, which is down, GPU 1 in HW "
                 "thermal "
                 "slowdown with a row remap pending"
               : "");
    std::printf("%-14s %10s %12s %14s %14s %14s\n", "format", "B/sample", "write us/smp", "replay smp/s",
                "read smp/s", "peak RSS MiB");
    double observe_rate = 0;
    double write_us[2];
    ChildRun runs[2];
    for (int i = 0; i < 2; ++i) {  // files and replays first, while this process is small
        write_us[i] = write_timeline_in_child(formats[i], base, samples) / static_cast<double>(samples) * 1e6;
        formats[i].bytes = file_size(formats[i].path);
        if (exists(binary)) runs[i] = run_replay(binary, formats[i].path);
    }
    for (int i = 0; i < 2; ++i) {
        const Format& f = formats[i];
        const ChildRun& r = runs[i];
        const InProcess m = measure_in_child(f);
        observe_rate = m.profiler_rate;
        std::printf("%-14s %10.0f %12.1f %14.0f %14.0f %14.1f%s\n", f.name, f.bytes / samples, write_us[i],
                    r.cpu > 0 ? samples / r.cpu : 0.0, m.read_rate, r.max_rss_kib / 1024.0,
                    r.exit_code == 0 ? "" : "  (replay failed)");
    }
    const double v2 = formats[1].bytes / samples;
    std::printf(
        "\nsize: v2 %.0f B/sample (goal <= 512), %.1fx smaller than v1; Prometheus-style reference "
        "1.3 B x %zu series = %.0f B/sample\n",
        v2, formats[0].bytes / formats[1].bytes, series, 1.3 * static_cast<double>(series));
    std::printf(
        "entropy floor of the synthetic motion: %.0f B/sample (what its random choices carry; no lossless "
        "format stores it in less), v2 is %.2fx that\n",
        entropy_bytes, v2 / entropy_bytes);
    std::printf(
        "replay (stallscope replay, samples per CPU second): goal >= 1 000 000 (vm) / >= 200 000 "
        "(dgx-h100) per core; the Profiler alone (as replay calls it) %.0f samples/s on this node\n",
        observe_rate);
    // The goals' budgets against what the format alone costs: a replay cannot be faster than this floor.
    const FormatFloor floor = measure_floor_in_child(formats[1], samples);
    const double floor_us = floor.zstd_us + floor.parse_us;
    if (floor_us > 0)
        std::printf(
            "v2 format floor (no sample applied, no rate, no rule): zstd stream %.2f us + "
            "parse (as the reader parses) %.2f us = %.2f us a sample, at most %.0f samples/s; of the goals' "
            "budgets (1.00 us vm, 5.00 us dgx-h100) that is %.0f %% / %.0f %%\n",
            floor.zstd_us, floor.parse_us, floor_us, 1e6 / floor_us, floor_us / 1.0 * 100,
            floor_us / 5.0 * 100);
    if (std::getenv("STALLSCOPE_BENCH_KEEP")) {  // the generated timelines, for perf / callgrind
        std::printf("kept: %s\n", dir.c_str());
        return 0;
    }
    for (const auto& f : formats) std::remove(f.path.c_str());
    rmdir(dir.c_str());
    return 0;
}
