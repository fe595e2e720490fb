#include "bench/cli_cost.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

namespace stallscope::bench {
namespace {

struct Run {
    double cpu = -1;
    double bytes = 0;
    int status = -1;
};

Run run_cli(const std::string& binary, const std::string& tree, int count) {
    Run r;
    int out[2];
    if (::pipe(out) != 0) return r;
    const std::string count_text = std::to_string(count), interval = std::to_string(kCliIntervalSeconds);
    std::vector<std::string> env = {"STALLSCOPE_PROCFS_ROOT=" + tree + "/proc",
                                    "STALLSCOPE_SYSFS_ROOT=" + tree + "/sys",
                                    "STALLSCOPE_ETHTOOL_ROOT=" + tree + "/ethtool",
                                    "STALLSCOPE_DEV_ROOT=/nonexistent",
                                    "STALLSCOPE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1",
                                    "STALLSCOPE_NVIDIA_SMI=/nonexistent/nvidia-smi",
                                    "PATH=/usr/bin:/bin"};
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        if (int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDERR_FILENO);
        ::close(out[0]);
        std::vector<char*> envp;
        for (auto& e : env) envp.push_back(e.data());
        envp.push_back(nullptr);
        const char* argv[] = {binary.c_str(), "--interval-seconds", interval.c_str(),
                              "--count",      count_text.c_str(),   "--json",
                              nullptr};
        ::execve(binary.c_str(), const_cast<char* const*>(argv), envp.data());
        ::_exit(127);
    }
    ::close(out[1]);
    char buf[65536];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) r.bytes += static_cast<double>(n);
    ::close(out[0]);
    rusage usage{};
    ::wait4(pid, &r.status, 0, &usage);
    r.cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    return r;
}

// A fixed cadence as the CLI keeps it (helper/cli_sample.cc): the next deadline is the last plus the
// interval, re-anchored to now after an overrun rather than catching up with a burst.
class Cadence {
  public:
    explicit Cadence(double interval) : interval_(interval), next_(monotonic_now()) {}
    void wait() {
        next_ += interval_;
        if (next_ < monotonic_now()) next_ = monotonic_now();
        timespec ts{};
        ts.tv_sec = static_cast<time_t>(next_);
        ts.tv_nsec = static_cast<long>((next_ - static_cast<double>(ts.tv_sec)) * 1e9);
        while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR && !g_interrupted) {
        }
    }

  private:
    double interval_, next_;
};

// utime + stime of a live process in clock ticks (fields 14 and 15 of /proc/<pid>/stat); -1 when gone.
long cpu_ticks_of(pid_t pid) {
    const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close_paren = text.rfind(')');
    if (close_paren == std::string::npos) return -1;
    const char* p = text.c_str() + close_paren + 1;
    long utime = 0, stime = 0;
    for (int field = 3; field <= 15 && *p; ++field) {
        while (*p == ' ') ++p;
        if (field == 14) utime = std::strtol(p, nullptr, 10);
        if (field == 15) stime = std::strtol(p, nullptr, 10);
        while (*p && *p != ' ') ++p;
    }
    return utime + stime;
}

}  // namespace

Cost paced_scrape_cost(NodeExporter& exporter, double interval, int min_scrapes, std::string& error) {
    constexpr long kMinTicks = 200;  // as NodeExporter::measure: tick resolution <= 0.5 %
    constexpr double kMaxSeconds = 60;
    Cost cost;
    const long ticks0 = cpu_ticks_of(exporter.pid());
    const long long reads0 = read_syscalls(std::to_string(exporter.pid()));
    const double started = monotonic_now();
    Cadence cadence(interval);
    long ticks = 0;
    while (!g_interrupted && (cost.count < min_scrapes || ticks < kMinTicks) &&
           monotonic_now() - started < kMaxSeconds) {
        if (cost.count > 0) cadence.wait();
        if (!exporter.scrape(false, error)) {
            cost.cpu = -1;
            return cost;
        }
        ++cost.count;
        ticks = cpu_ticks_of(exporter.pid()) - ticks0;
    }
    cost.ticks = ticks;
    cost.cpu = static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK)) /
               static_cast<double>(cost.count);
    const long long reads1 = read_syscalls(std::to_string(exporter.pid()));
    if (reads0 >= 0 && reads1 >= 0)
        cost.reads = static_cast<double>(reads1 - reads0) / static_cast<double>(cost.count);
    return cost;
}

Cost floor_cost(const std::vector<std::string>& files, int iterations, double interval) {
    std::vector<int> fds;
    for (const auto& f : files)
        if (int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) fds.push_back(fd);
    Cost cost;
    cost.files = fds.size();
    char buf[4096];
    volatile std::size_t sink = 0;
    const long long reads = read_syscalls("self");
    // The whole loop's CPU, the sleeps' system calls and wake-ups included, as the CLI's is counted.
    const double start = cpu_seconds();
    Cadence cadence(interval);
    for (int i = 0; i < iterations && !g_interrupted; ++i, ++cost.count) {
        if (i > 0 && interval > 0) cadence.wait();
        for (int fd : fds) sink = sink + static_cast<std::size_t>(::pread(fd, buf, sizeof buf, 0));
    }
    const double n = static_cast<double>(std::max(1L, cost.count));
    cost.cpu = (cpu_seconds() - start) / n;
    if (reads >= 0) cost.reads = static_cast<double>(read_syscalls("self") - reads) / n;
    for (int fd : fds) ::close(fd);
    return cost;
}

CliCost cli_json_cost(const std::string& binary, const std::string& tree, int short_count, int long_count,
                      int rounds) {
    CliCost c;
    if (::access(binary.c_str(), X_OK) != 0) {
        c.error = binary + " not built";
        return c;
    }
    for (int round = 0; round < rounds && !g_interrupted; ++round) {
        const Run a = run_cli(binary, tree, short_count);
        const Run b = run_cli(binary, tree, long_count);
        if (a.status != 0 || b.status != 0) {
            c.error = "the CLI exited with status " + std::to_string(a.status != 0 ? a.status : b.status);
            c.cpu_per_sample = -1;
            return c;
        }
        const double cpu = (b.cpu - a.cpu) / (long_count - short_count);
        c.rounds.push_back(cpu);
        if (round == 0 || cpu < c.cpu_per_sample) c.cpu_per_sample = cpu;
        c.bytes_per_line = b.bytes / long_count;
    }
    return c;
}

}  // namespace stallscope::bench
