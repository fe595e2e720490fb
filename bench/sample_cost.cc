// Per-sample cost of stallscope's node sources on a fixture tree, against the raw pread floor for the
// same file set, measured in the same run (ARCHITECTURE.md "Performance targets": <= 1.5x the floor).
//
//   ninja -C build bench/sample_cost && build/bench/sample_cost [fixture-node-dir] [iterations]
//
// The floor is what no collector can beat: every file the file-based sources read, opened once and
// pread into a stack buffer per sample, no parsing. NVML (the fake library here) is timed separately
// because its real cost is the driver's, not ours.
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/sampler.h"

using namespace stallscope;

namespace {

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::vector<std::string> list_dir(const std::string& dir) {
    std::vector<std::string> names;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') names.emplace_back(e->d_name);
        closedir(d);
    }
    return names;
}

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

double floor_cost(const std::vector<std::string>& files, int iterations, std::size_t& opened) {
    std::vector<int> fds;
    for (const auto& f : files)
        if (int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) fds.push_back(fd);
    opened = fds.size();
    char buf[4096];
    volatile std::size_t sink = 0;
    const double start = cpu_seconds();
    for (int i = 0; i < iterations; ++i)
        for (int fd : fds) sink = sink + static_cast<std::size_t>(pread(fd, buf, sizeof buf, 0));
    const double cost = (cpu_seconds() - start) / iterations;
    for (int fd : fds) close(fd);
    return cost;
}

double sampler_cost(Sampler& sampler, int iterations) {
    sampler.sample_at(0);  // discovery and first opens are not per-sample cost
    const double start = cpu_seconds();
    for (int i = 0; i < iterations; ++i) sampler.sample_at(i + 1.0);
    return (cpu_seconds() - start) / iterations;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string node =
        argc > 1 ? argv[1] : std::string(STALLSCOPE_SOURCE_DIR) + "/fixtures/nodes/dgx-h100";
    const int iterations = argc > 2 ? std::atoi(argv[2]) : 2000;
    Roots roots;
    roots.procfs = node + "/proc";
    roots.sysfs = node + "/sys";
    roots.ethtool = node + "/ethtool";

    std::vector<std::unique_ptr<Source>> file_sources;
    file_sources.push_back(make_procfs_source(roots));
    file_sources.push_back(make_ethtool_source(roots));
    file_sources.push_back(make_infiniband_source(roots));
    Sampler files_only(std::move(file_sources));

    std::size_t opened = 0;
    const auto files = sampled_files(roots.procfs, roots.sysfs);
    // Alternate floor and sampler twice so neither gets the warmer cache by position alone.
    double floor = floor_cost(files, iterations, opened);
    double ours = sampler_cost(files_only, iterations);
    floor = std::min(floor, floor_cost(files, iterations, opened));
    ours = std::min(ours, sampler_cost(files_only, iterations));

    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("fixture: %s (%zu files read per sample, %d iterations)\n", node.c_str(), opened, iterations);
    std::printf("pread floor:            %8.1f us CPU per sample\n", floor * 1e6);
    std::printf("stallscope file sources:%8.1f us CPU per sample\n", ours * 1e6);
    std::printf("ratio to floor:         %8.2fx  (target <= 1.5x)\n", ours / floor);
    std::printf("peak RSS:               %8.1f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
    if (const char* lib = std::getenv("STALLSCOPE_NVML_LIBRARY")) {
        roots.nvml_library = lib;
        std::vector<std::unique_ptr<Source>> gpu;
        gpu.push_back(make_nvidia_source(roots));
        Sampler nvml_only(std::move(gpu));
        std::printf("NVML source (%s): %8.1f us CPU per sample\n", lib,
                    sampler_cost(nvml_only, iterations / 4) * 1e6);
    }
    return 0;
}
