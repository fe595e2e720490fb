#include "bench/cli_cost.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
    const std::string count_text = std::to_string(count);
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
        const char* argv[] = {
            binary.c_str(), "--interval-seconds", "0.01", "--count", count_text.c_str(), "--json", nullptr};
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

}  // namespace

CliCost cli_json_cost(const std::string& binary, const std::string& tree, int short_count, int long_count) {
    CliCost c;
    if (::access(binary.c_str(), X_OK) != 0) {
        c.error = binary + " not built";
        return c;
    }
    const Run a = run_cli(binary, tree, short_count);
    const Run b = run_cli(binary, tree, long_count);
    if (a.status != 0 || b.status != 0) {
        c.error = "the CLI exited with status " + std::to_string(a.status != 0 ? a.status : b.status);
        return c;
    }
    c.cpu_per_sample = (b.cpu - a.cpu) / (long_count - short_count);
    c.bytes_per_line = b.bytes / long_count;
    return c;
}

}  // namespace stallscope::bench
