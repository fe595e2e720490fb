#include "bench/bench_util.h"

#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace stallscope::bench {

volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
    g_interrupted = 1;
}

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::vector<std::string> list_dir(const std::string& dir) {
    std::vector<std::string> names;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') names.emplace_back(e->d_name);
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

long long read_syscalls(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/io");
    std::string key;
    long long value = 0;
    while (in >> key >> value)
        if (key == "syscr:") return value;
    return -1;
}

std::vector<std::string> net_dev_names(const std::string& text) {
    std::vector<std::string> names;
    std::istringstream in(text);
    std::string line;
    for (int row = 0; std::getline(in, line); ++row) {
        const auto colon = line.find(':');
        if (row < 2 || colon == std::string::npos) continue;
        const auto start = line.find_first_not_of(' ');
        names.push_back(line.substr(start, colon - start));
    }
    return names;
}

}  // namespace stallscope::bench
