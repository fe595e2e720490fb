// What the per-step helper costs the node it watches: `stallscope record` at a 1 s interval on the DGX-like
// fixture (8 GPUs through the fake libnvidia-ml, 8 HCAs), and the same without NVML, each writing timeline
// v1 and v2, all four run side by side.
// Targets (ARCHITECTURE.md "Performance targets"): <= 0.1 % of one core at 1 s, RSS <= 16 MiB without
// libnvidia-ml, no RSS growth.
//
//   ninja -C build-bench bench/helper_overhead && build-bench/bench/helper_overhead [seconds] [interval]
//   (default 120 s at 1 s; the 10-minute run: helper_overhead 600)
//
// CPU is utime+stime from /proc/<pid>/stat, counted from the end of the helper's first 15 s (10 s of dense
// start-up sampling, discovery and the NVML load are start-up cost, reported separately) to just before
// SIGTERM, over that wall time. RSS is VmRSS every 10 s and VmHWM (peak) from /proc/<pid>/status.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr double kWarmupSeconds = 15;
constexpr double kRssEverySeconds = 10;

double monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// utime + stime of a live process, in seconds; -1 when it is gone.
double cpu_seconds_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(in, text)) return -1;
    // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
    const auto close = text.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
        if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// "VmRSS:     1234 kB" -> KiB; -1 when missing.
long status_kib(pid_t pid, const char* key) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    const std::size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
            return std::strtol(line.c_str() + n + 1, nullptr, 10);
    return -1;
}

struct Run {
    std::string name;
    std::vector<std::string> env;
    std::string out_dir;
    std::string timeline_format = "1";  // record --timeline-format
    pid_t pid = -1;
    double started = 0, cpu_at_warmup = -1, wall_at_warmup = 0, cpu_at_end = -1, wall_at_end = 0;
    std::vector<std::pair<double, long>> rss_kib;  // (seconds since start, VmRSS)
    long hwm_kib = -1;
    int exit_code = -1;
    long timeline_bytes = 0;
};

pid_t spawn(const std::string& binary, const std::vector<std::string>& args,
            const std::vector<std::string>& env) {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (FILE* null = std::fopen("/dev/null", "w")) dup2(fileno(null), STDOUT_FILENO);
    execv(binary.c_str(), argv.data());
    std::perror("execv");
    _exit(127);
}

bool exists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
    const double duration = argc > 1 ? std::atof(argv[1]) : 120;
    const std::string interval = argc > 2 ? argv[2] : "1";
    const std::string binary =
        std::getenv("STALLSCOPE_BIN") ? std::getenv("STALLSCOPE_BIN") : STALLSCOPE_BINARY;
    const std::string fake_nvml =
        std::getenv("STALLSCOPE_FAKE_NVML_LIB") ? std::getenv("STALLSCOPE_FAKE_NVML_LIB") : FAKE_NVML_PATH;
    const std::string node = std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nodes/dgx-h100";
    if (duration < kWarmupSeconds + kRssEverySeconds) {
        std::fprintf(stderr, "helper_overhead: duration must be >= %.0f s\n",
                     kWarmupSeconds + kRssEverySeconds);
        return 2;
    }
    if (!exists(binary)) {
        std::fprintf(stderr, "helper_overhead: %s missing (ninja -C <build> helper/stallscope)\n",
                     binary.c_str());
        return 1;
    }
    char tmpl[] = "/tmp/stallscope-bench-XXXXXX";
    const std::string tmp = mkdtemp(tmpl);

    const std::vector<std::string> common{
        "STALLSCOPE_PROCFS_ROOT=" + node + "/proc",
        "STALLSCOPE_SYSFS_ROOT=" + node + "/sys",
        "STALLSCOPE_DEV_ROOT=" + std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/kmsg/dev-dgx-h100",
        "STALLSCOPE_NVIDIA_SMI=/nonexistent/nvidia-smi",
        "SLURM_JOB_ID=4242",
        "SLURM_STEP_ID=0"};
    std::vector<Run> runs;
    if (exists(fake_nvml)) {
        Run r{"dgx-h100, fake NVML (8 GPUs)", common, tmp + "/nvml"};
        r.env.push_back("STALLSCOPE_NVML_LIBRARY=" + fake_nvml);
        r.env.push_back("STALLSCOPE_FAKE_NVML_FIXTURE=" + node + "/nvml.json");
        runs.push_back(r);
    } else {
        std::printf("(fake NVML %s not built: only the run without NVML)\n", fake_nvml.c_str());
    }
    Run bare{"dgx-h100, no NVML", common, tmp + "/bare"};
    bare.env.push_back("STALLSCOPE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1");
    runs.push_back(bare);
    // The same runs writing timeline v2 (zstd change records, the default), side by side with v1.
    for (std::size_t i = 0, n = runs.size(); i < n; ++i) {
        Run v2 = runs[i];
        runs[i].name += ", timeline v1";
        v2.name += ", timeline v2";
        v2.out_dir += "-v2";
        v2.timeline_format = "2";
        runs.push_back(v2);
    }

    std::printf("stallscope record --interval-seconds %s for %.0f s (%s)\n", interval.c_str(), duration,
                binary.c_str());
    for (auto& r : runs) {
        mkdir(r.out_dir.c_str(), 0755);
        r.pid = spawn(binary,
                      {"record", "--out-dir", r.out_dir, "--interval-seconds", interval, "--timeline-format",
                       r.timeline_format},
                      r.env);
        r.started = monotonic_now();
    }
    const double t0 = monotonic_now();
    double next_rss = t0 + kRssEverySeconds;
    bool warmed = false;
    while (monotonic_now() - t0 < duration) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const double now = monotonic_now();
        if (!warmed && now - t0 >= kWarmupSeconds) {
            warmed = true;
            for (auto& r : runs) {
                r.cpu_at_warmup = cpu_seconds_of(r.pid);
                r.wall_at_warmup = monotonic_now();
            }
        }
        if (now >= next_rss) {
            next_rss += kRssEverySeconds;
            for (auto& r : runs) r.rss_kib.emplace_back(now - r.started, status_kib(r.pid, "VmRSS"));
        }
    }
    for (auto& r : runs) {
        r.cpu_at_end = cpu_seconds_of(r.pid);
        r.wall_at_end = monotonic_now();
        r.hwm_kib = status_kib(r.pid, "VmHWM");
        kill(r.pid, SIGTERM);
    }
    for (auto& r : runs) {
        int status = 0;
        waitpid(r.pid, &status, 0);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        if (DIR* d = opendir(r.out_dir.c_str())) {
            while (dirent* e = readdir(d)) {
                struct stat st {};
                if (std::strncmp(e->d_name, "timeline.", 9) == 0 &&
                    stat((r.out_dir + "/" + e->d_name).c_str(), &st) == 0)
                    r.timeline_bytes += st.st_size;
            }
            closedir(d);
        }
    }

    for (const auto& r : runs) {
        const double wall = r.wall_at_end - r.wall_at_warmup;
        const double cpu = r.cpu_at_end - r.cpu_at_warmup;
        const double pct = cpu / wall * 100;
        long first = -1, last = -1, low = -1, high = -1;
        for (const auto& [t, kib] : r.rss_kib) {
            if (t < kWarmupSeconds || kib < 0) continue;
            if (first < 0) first = kib;
            last = kib;
            low = low < 0 ? kib : std::min(low, kib);
            high = std::max(high, kib);
        }
        std::printf("\n%s\n", r.name.c_str());
        std::printf("  CPU steady state  %.3f %% of one core (%.2f s CPU over %.0f s; target <= 0.1 %%)%s\n",
                    pct, cpu, wall, pct <= 0.1 ? "" : "  ABOVE TARGET");
        std::printf(
            "  CPU start-up      %.2f s in the first %.0f s (discovery, NVML load, 1 s dense start)\n",
            r.cpu_at_warmup, kWarmupSeconds);
        std::printf("  peak RSS (VmHWM)  %.1f MiB (target <= 16 MiB without libnvidia-ml)\n",
                    r.hwm_kib / 1024.0);
        std::printf("  VmRSS every %.0f s (MiB):", kRssEverySeconds);
        for (const auto& [t, kib] : r.rss_kib) std::printf(" %.1f", kib / 1024.0);
        std::printf("\n  RSS growth after warm-up  %+ld KiB (first %.1f, last %.1f, range %.1f-%.1f MiB)\n",
                    last - first, first / 1024.0, last / 1024.0, low / 1024.0, high / 1024.0);
        std::printf("  helper exit %d after SIGTERM; timeline %.1f MiB (%.0f B per second recorded)\n",
                    r.exit_code, r.timeline_bytes / 1048576.0,
                    r.timeline_bytes / (r.wall_at_end - r.started));
    }
    std::printf("\n(output left in %s)\n", tmp.c_str());
    return 0;
}
