// Small helpers shared by the benchmarks in bench/ (CPU clocks, files, /proc readings).
#pragma once

#include <signal.h>

#include <cstddef>
#include <string>
#include <vector>

namespace stallscope::bench {

// Set by the benches' SIGINT/SIGTERM handler: long loops stop early so temp trees get removed.
extern volatile sig_atomic_t g_interrupted;
void on_interrupt(int);

double cpu_seconds();                                       // this process, CLOCK_PROCESS_CPUTIME_ID
double monotonic_now();                                     // CLOCK_MONOTONIC seconds
std::vector<std::string> list_dir(const std::string& dir);  // sorted, without dot entries
std::string read_file(const std::string& path);             // "" when unreadable
// "syscr" (read-type syscalls) from /proc/<pid>/io, -1 when the kernel has no task I/O accounting.
long long read_syscalls(const std::string& pid);
// Netdev names in a /proc/net/dev text (rows after the two header lines).
std::vector<std::string> net_dev_names(const std::string& text);

struct Cost {
    double cpu = 0;             // seconds per sample
    double reads = -1;          // read syscalls per sample (-1: no /proc/<pid>/io)
    double news = -1;           // operator new calls per sample (-1: not counted)
    std::size_t files = 0;      // floor: files opened
    long ticks = 0, count = 0;  // node_exporter: clock ticks and scrapes measured
};

}  // namespace stallscope::bench
