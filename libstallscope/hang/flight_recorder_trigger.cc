#include "libstallscope/hang/flight_recorder_trigger.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "libstallscope/hang/environ_block.h"

namespace stallscope {
namespace {

bool newer_or_same(const timespec& a, const timespec& b) {
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec);
}

// "<stem><digits><suffix>" -> digits, -1 otherwise.
int rank_in_name(std::string_view name, std::string_view stem, std::string_view suffix) {
    if (name.size() <= stem.size() + suffix.size() || name.substr(0, stem.size()) != stem ||
        name.substr(name.size() - suffix.size()) != suffix)
        return -1;
    const std::string_view digits = name.substr(stem.size(), name.size() - stem.size() - suffix.size());
    int rank = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (ec != std::errc() || end != digits.data() + digits.size() || rank < 0) return -1;
    return rank;
}

// Reads a regular file opened without following links, at most max_bytes (+1 to see it was larger).
bool read_regular(const std::string& path, std::size_t max_bytes, std::string& out, struct stat& st) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (ok) {
        out.clear();
        char buf[65536];
        while (out.size() <= max_bytes) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                ok = n == 0;
                break;
            }
            out.append(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    return ok;
}

}  // namespace

double thread_cpu_seconds() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

FlightRecorderPaths flight_recorder_paths_from_environ(std::string_view block) {
    FlightRecorderPaths p;
    std::string fr_dump, nccl_dump, xccl_pipe;
    for_each_environ_entry(block, [&](std::string_view name, std::string_view value) {
        if (value.size() > 4096) return;
        if (name == "TORCH_NCCL_DEBUG_INFO_PIPE_FILE") p.pipe_prefix = value;
        if (name == "TORCH_FR_DEBUG_INFO_PIPE_FILE") xccl_pipe = value;
        if (name == "TORCH_FR_DUMP_TEMP_FILE") fr_dump = value;
        if (name == "TORCH_NCCL_DEBUG_INFO_TEMP_FILE") nccl_dump = value;
        if ((name == "TORCH_FR_BUFFER_SIZE" || name == "TORCH_NCCL_TRACE_BUFFER_SIZE") && value == "0")
            p.buffer_off = true;
    });
    if (p.pipe_prefix.empty()) p.pipe_prefix = xccl_pipe;
    // TORCH_FR_DUMP_TEMP_FILE is read first where both exist (getCvarString's order in 2.8+).
    p.dump_prefix = !fr_dump.empty() ? fr_dump : nccl_dump;
    return p;
}

std::vector<DumpRequest> request_dumps(const std::string& pipe_prefix, std::size_t max_pipes) {
    std::vector<DumpRequest> out;
    if (pipe_prefix.empty()) return out;
    const std::size_t slash = pipe_prefix.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : pipe_prefix.substr(0, slash == 0 ? 1 : slash);
    const std::string stem = slash == std::string::npos ? pipe_prefix : pipe_prefix.substr(slash + 1);
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
        const int rank = rank_in_name(e->d_name, stem, ".pipe");
        if (rank < 0) continue;
        if (out.size() >= max_pipes) break;
        out.push_back({rank, dir + "/" + e->d_name, ""});
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
    for (auto& r : out) {
        struct stat st {};
        if (::lstat(r.pipe.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) {
            r.outcome = "not_a_fifo";
            continue;
        }
        // O_NONBLOCK: no reader -> ENXIO now, never a wait for one.
        const int fd = ::open(r.pipe.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            r.outcome = errno == ENXIO ? "no_reader" : std::string("error: ") + std::strerror(errno);
            continue;
        }
        const char byte = '1';
        ssize_t n;
        do n = ::write(fd, &byte, 1);
        while (n < 0 && errno == EINTR);
        r.outcome = n == 1            ? "requested"
                    : errno == EAGAIN ? "pipe_full"
                                      : std::string("error: ") + std::strerror(errno);
        ::close(fd);
    }
    return out;
}

std::vector<DumpRead> wait_for_dumps(const std::string& dump_prefix, const std::vector<int>& ranks,
                                     const DumpWait& wait) {
    std::vector<DumpRead> reads;
    for (const int rank : ranks)
        reads.push_back({rank, dump_prefix + std::to_string(rank), "timeout", {}, {}, {}});
    std::vector<off_t> last_size(reads.size(), -1);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(wait.deadline_seconds);
    std::size_t bytes_left = wait.max_bytes;
    while (true) {
        bool pending = false;
        for (std::size_t i = 0; i < reads.size(); ++i) {
            DumpRead& r = reads[i];
            if (r.outcome != "timeout" && r.outcome.rfind("parse_error", 0) != 0) continue;
            struct stat st {};
            if (::lstat(r.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
                !newer_or_same(st.st_mtim, wait.requested_at) || st.st_size == 0) {
                pending = true;
                continue;
            }
            // Complete when its size held still over one poll (the rank writes it with one ofstream).
            if (st.st_size != last_size[i]) {
                last_size[i] = st.st_size;
                pending = true;
                continue;
            }
            if (static_cast<std::size_t>(st.st_size) > bytes_left) {
                r.outcome = "too_large";
                continue;
            }
            struct stat read_st {};
            if (!read_regular(r.path, bytes_left, r.raw, read_st)) {
                r.outcome = "unreadable";
                continue;
            }
            if (r.raw.size() > bytes_left) {
                r.outcome = "too_large";
                r.raw.clear();
                continue;
            }
            if (thread_cpu_seconds() > wait.cpu_limit_seconds) {
                r.outcome = "not_parsed_cpu_budget";  // the raw copy still goes to the evidence
                bytes_left -= r.raw.size();
                continue;
            }
            std::string error;
            r.warnings.clear();
            if (read_flight_recorder_dump(r.raw, r.summary, r.warnings, error)) {
                r.summary.rank = r.rank;
                r.outcome = "read";
                bytes_left -= r.raw.size();
            } else {
                r.outcome = "parse_error: " + error;  // maybe caught mid-write: tried again next poll
                last_size[i] = -1;
                pending = true;
            }
        }
        if (!pending || std::chrono::steady_clock::now() >= deadline || (wait.cancel && *wait.cancel)) break;
        std::this_thread::sleep_for(std::chrono::duration<double>(wait.poll_seconds));
    }
    for (auto& r : reads)
        if (r.outcome != "read" && r.outcome != "not_parsed_cpu_budget") r.raw.clear();
    return reads;
}

}  // namespace stallscope
