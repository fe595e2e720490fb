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
// driver's and node_exporter reads no GPUs. CPU from CLOCK_PROCESS_CPUTIME_ID.
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
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/sampler.h"

#ifndef FAKE_NVML_PATH
#define FAKE_NVML_PATH ""
#endif

using namespace stallscope;
namespace fs = std::filesystem;

namespace {

constexpr const char* kNodeExporter = "/usr/bin/prometheus-node-exporter";
constexpr int kNodeExporterWarmupScrapes = 20;
constexpr long kMinTicks = 200;  // clock ticks per measured round: tick resolution <= 0.5 %
constexpr double kMaxRoundSeconds = 120;

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) {
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

// "syscr" (read-type syscalls) from /proc/<pid>/io, -1 when the kernel has no task I/O accounting.
long long read_syscalls(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/io");
    std::string key;
    long long value = 0;
    while (in >> key >> value)
        if (key == "syscr:") return value;
    return -1;
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

// Netdev names in a /proc/net/dev text (rows after the two header lines).
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

std::size_t count_regular_files(const std::string& root) {
    std::size_t n = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
        if (it->symlink_status().type() == fs::file_type::regular) ++n;
    return n;
}

// Copies `from` into `root` (created) and grows it: ports 2..ports_per_hca on every HCA (copies of
// port 1) and /proc/net/dev rows up to `netdevs`. Returns an error text, empty on success.
std::string build_big_node(const std::string& from, const std::string& root, int ports_per_hca, int netdevs) {
    std::error_code ec;
    fs::create_directory(root, ec);
    fs::copy(from, root, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) return "copy " + from + ": " + ec.message();
    const std::string ib = root + "/sys/class/infiniband";
    for (const auto& dev : list_dir(ib)) {
        const fs::path device = fs::canonical(ib + "/" + dev, ec);
        if (ec) return ib + "/" + dev + ": " + ec.message();
        for (int port = 2; port <= ports_per_hca; ++port) {
            const fs::path dst = device / "ports" / std::to_string(port);
            fs::copy(device / "ports" / "1", dst, fs::copy_options::recursive, ec);
            if (ec) return "copy port 1 of " + dev + ": " + ec.message();
            // Distinct traffic on the copy, so the two ports do not read as one.
            for (const char* c : {"port_rcv_data", "port_xmit_data"}) {
                const auto path = dst / "counters" / c;
                const auto value = std::strtoull(read_file(path.string()).c_str(), nullptr, 10);
                std::ofstream(path) << value / 2 + static_cast<unsigned long long>(port) << "\n";
            }
        }
    }
    const std::string net_dev = root + "/proc/net/dev";
    std::string text = read_file(net_dev);
    auto present = net_dev_names(text);
    // What a DGX H100 has besides lo, the management port and the compute IPoIB netdevs: storage ports
    // of the dual-port ConnectX-7s in Ethernet mode, a second management port, docker0; then veths.
    const std::vector<std::string> extra = {"eno2",          "enp41s0f0np0",  "enp41s0f1np1",
                                            "enp170s0f0np0", "enp170s0f1np1", "docker0"};
    std::ofstream out(net_dev, std::ios::app);
    for (std::size_t i = 0; static_cast<int>(present.size()) < netdevs; ++i) {
        const std::string name = i < extra.size() ? extra[i] : "veth" + std::to_string(i - extra.size());
        if (std::find(present.begin(), present.end(), name) != present.end()) continue;
        const unsigned long long k = i + 1;
        char row[256];
        std::snprintf(row, sizeof row, "%6s:%llu %llu 0 %llu 0 0 0 %llu %llu %llu 0 0 0 0 0 0\n",
                      name.c_str(), k * 7919000123ULL, k * 6151231ULL, k, k * 11, k * 5113000457ULL,
                      k * 4007001ULL);
        out << row;
        present.push_back(name);
    }
    return out ? "" : net_dev + ": write failed";
}

// ---------------------------------------------------------------------------------------------------
// stallscope and the floor.

struct Cost {
    double cpu = 0;             // seconds per sample
    double reads = -1;          // read syscalls per sample (-1: no /proc/<pid>/io)
    std::size_t files = 0;      // floor: files opened
    long ticks = 0, count = 0;  // node_exporter: clock ticks and scrapes measured
};

Cost floor_cost(const std::vector<std::string>& files, int iterations) {
    std::vector<int> fds;
    for (const auto& f : files)
        if (int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) fds.push_back(fd);
    Cost cost;
    cost.files = fds.size();
    char buf[4096];
    volatile std::size_t sink = 0;
    const long long reads = read_syscalls("self");
    const double start = cpu_seconds();
    for (int i = 0; i < iterations; ++i)
        for (int fd : fds) sink = sink + static_cast<std::size_t>(pread(fd, buf, sizeof buf, 0));
    cost.cpu = (cpu_seconds() - start) / iterations;
    if (reads >= 0) cost.reads = static_cast<double>(read_syscalls("self") - reads) / iterations;
    for (int fd : fds) close(fd);
    return cost;
}

Cost sampler_cost(Sampler& sampler, int iterations, double& clock) {
    const long long reads = read_syscalls("self");
    const double start = cpu_seconds();
    for (int i = 0; i < iterations; ++i) sampler.sample_at(clock += 1.0);
    Cost cost;
    cost.cpu = (cpu_seconds() - start) / iterations;
    if (reads >= 0) cost.reads = static_cast<double>(read_syscalls("self") - reads) / iterations;
    return cost;
}

// ---------------------------------------------------------------------------------------------------
// node_exporter.

// One keep-alive HTTP/1.1 connection to 127.0.0.1:port; GET returns the body (chunked or sized).
class HttpClient {
  public:
    explicit HttpClient(int port) : port_(port) {}
    ~HttpClient() { disconnect(); }
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Body of GET `path`; nullopt with `error` set on failure. `content_encoding` gets that header.
    std::optional<std::string> get(const std::string& path, bool gzip, std::string& error,
                                   std::string* content_encoding = nullptr) {
        for (int attempt = 0; attempt < 2; ++attempt) {  // a keep-alive connection the server closed
            if (fd_ < 0 && !connect_socket(error)) return std::nullopt;
            const std::string request = "GET " + path +
                                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                                        "\r\nUser-Agent: stallscope-sample-cost\r\n" +
                                        (gzip ? "Accept-Encoding: gzip\r\n" : "") + "\r\n";
            if (send_all(request)) {
                if (auto body = read_response(error, content_encoding)) return body;
                if (!error.empty()) {
                    disconnect();
                    return std::nullopt;
                }
            }
            disconnect();
        }
        if (error.empty()) error = "connection closed";
        return std::nullopt;
    }

  private:
    bool connect_socket(std::string& error) {
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(port_));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            error = std::string("connect: ") + std::strerror(errno);
            disconnect();
            return false;
        }
        return true;
    }
    void disconnect() {
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
        buffer_.clear();
    }
    bool send_all(const std::string& data) {
        for (std::size_t sent = 0; sent < data.size();) {
            const ssize_t n = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return false;
            sent += static_cast<std::size_t>(n);
        }
        return true;
    }
    bool fill() {  // more bytes into buffer_; false at EOF or error
        char chunk[65536];
        const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) return false;
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return true;
    }
    // A line ending in CRLF from buffer_ (without it).
    std::optional<std::string> line() {
        std::size_t end;
        while ((end = buffer_.find("\r\n")) == std::string::npos)
            if (!fill()) return std::nullopt;
        std::string l = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return l;
    }
    std::optional<std::string> take(std::size_t n) {
        while (buffer_.size() < n)
            if (!fill()) return std::nullopt;
        std::string out = buffer_.substr(0, n);
        buffer_.erase(0, n);
        return out;
    }
    static std::string lower(std::string s) {
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }
    // nullopt with empty `error`: the connection was closed before a status line (retry once).
    std::optional<std::string> read_response(std::string& error, std::string* content_encoding) {
        auto status = line();
        if (!status) return std::nullopt;
        bool chunked = false, close_after = false;
        long long length = -1;
        while (auto header = line()) {
            if (header->empty()) break;
            const auto colon = header->find(':');
            if (colon == std::string::npos) continue;
            const std::string key = lower(header->substr(0, colon));
            std::string value = header->substr(header->find_first_not_of(' ', colon + 1));
            if (key == "content-length") length = std::atoll(value.c_str());
            if (key == "transfer-encoding" && lower(value).find("chunked") != std::string::npos)
                chunked = true;
            if (key == "connection" && lower(value) == "close") close_after = true;
            if (key == "content-encoding" && content_encoding) *content_encoding = value;
        }
        if (status->find(" 200 ") == std::string::npos) {
            error = "HTTP status: " + *status;
            return std::nullopt;
        }
        std::string body;
        if (chunked) {
            while (true) {
                auto size_line = line();
                if (!size_line) break;
                const auto size = std::strtoull(size_line->c_str(), nullptr, 16);
                if (size == 0) {
                    while (auto trailer = line())
                        if (trailer->empty()) break;
                    break;
                }
                auto data = take(size);
                if (!data || !line()) break;
                body += *data;
            }
        } else if (length >= 0) {
            if (auto data = take(static_cast<std::size_t>(length))) body = std::move(*data);
        } else {
            while (fill()) {
            }
            body = std::move(buffer_);
            close_after = true;
        }
        if (close_after) disconnect();
        return body;
    }

    int port_;
    int fd_ = -1;
    std::string buffer_;
};

int free_loopback_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = -1;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
        port = ntohs(addr.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

// utime + stime of a live process in clock ticks; -1 when gone.
long cpu_ticks_of(pid_t pid) {
    const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close_paren = text.rfind(')');
    if (close_paren == std::string::npos) return -1;
    std::istringstream rest(text.substr(close_paren + 2));
    std::string field;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14, 15 after "pid (comm)"
        if (i == 14) utime = std::atol(field.c_str());
        if (i == 15) stime = std::atol(field.c_str());
    }
    return utime + stime;
}

class NodeExporter {
  public:
    ~NodeExporter() { stop(); }

    // Starts it on the tree; empty string on success, else why not.
    std::string start(const std::string& binary, const std::string& tree, const std::string& log_path) {
        std::string why;
        for (int attempt = 0; attempt < 3; ++attempt) {  // the free port may be taken between probe and bind
            port_ = free_loopback_port();
            args_ = {binary,
                     "--path.procfs=" + tree + "/proc",
                     "--path.sysfs=" + tree + "/sys",
                     "--collector.disable-defaults",
                     "--collector.infiniband",
                     "--collector.netdev",
                     "--no-collector.netdev.netlink",
                     "--collector.meminfo",
                     "--collector.loadavg",
                     "--collector.pressure",
                     "--collector.vmstat",
                     "--no-collector.textfile",
                     "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
            log_path_ = log_path;
            pid_ = fork();
            if (pid_ == 0) {
                const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (log >= 0) {
                    dup2(log, 1);
                    dup2(log, 2);
                }
                std::vector<char*> argv;
                for (auto& a : args_) argv.push_back(a.data());
                argv.push_back(nullptr);
                execv(binary.c_str(), argv.data());
                std::fprintf(stderr, "exec %s: %s\n", binary.c_str(), std::strerror(errno));
                _exit(127);
            }
            if (pid_ < 0) return std::string("fork: ") + std::strerror(errno);
            client_ = std::make_unique<HttpClient>(port_);
            for (const double until = monotonic_now() + 15; monotonic_now() < until && !g_interrupted;) {
                int status = 0;
                if (waitpid(pid_, &status, WNOHANG) == pid_) {
                    pid_ = -1;
                    break;
                }
                std::string error;
                if (client_->get("/metrics", false, error)) return "";
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            why = "did not answer on 127.0.0.1:" + std::to_string(port_) + "; log " + log_path + ":\n" +
                  read_file(log_path);
            stop();
            if (why.find("address already in use") == std::string::npos) break;
        }
        return why;
    }

    void stop() {
        client_.reset();
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            int status = 0;
            waitpid(pid_, &status, 0);
        }
        pid_ = -1;
    }

    std::string command_line() const {
        std::string out;
        for (const auto& a : args_) out += (out.empty() ? "" : " ") + a;
        return out;
    }
    std::string log() const { return read_file(log_path_); }
    pid_t pid() const { return pid_; }

    std::optional<std::string> scrape(bool gzip, std::string& error, std::string* encoding = nullptr) {
        return client_->get("/metrics", gzip, error, encoding);
    }

    // CPU per scrape over >= min_scrapes scrapes and >= kMinTicks ticks; cpu < 0 on failure (`error`).
    Cost measure(int min_scrapes, bool gzip, std::string& error) {
        Cost cost;
        const std::string pid = std::to_string(pid_);
        const long ticks0 = cpu_ticks_of(pid_);
        const long long reads0 = read_syscalls(pid);
        const double started = monotonic_now();
        long ticks = 0;
        while (!g_interrupted && (cost.count < min_scrapes || ticks < kMinTicks) &&
               monotonic_now() - started < kMaxRoundSeconds) {
            if (!scrape(gzip, error)) {
                cost.cpu = -1;
                return cost;
            }
            ++cost.count;
            ticks = cpu_ticks_of(pid_) - ticks0;
        }
        cost.ticks = ticks;
        cost.cpu = static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK)) /
                   static_cast<double>(cost.count);
        const long long reads1 = read_syscalls(pid);
        if (reads0 >= 0 && reads1 >= 0)
            cost.reads = static_cast<double>(reads1 - reads0) / static_cast<double>(cost.count);
        return cost;
    }

    // Clock ticks it spends over `seconds` with no scrapes (printed; not subtracted).
    long idle_ticks(double seconds) {
        const long before = cpu_ticks_of(pid_);
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        return cpu_ticks_of(pid_) - before;
    }

  private:
    pid_t pid_ = -1;
    int port_ = -1;
    std::vector<std::string> args_;
    std::string log_path_;
    std::unique_ptr<HttpClient> client_;
};

// Value of the first sample line starting with `series` (name plus labels) in an exposition text.
std::optional<double> metric_value(const std::string& text, const std::string& series) {
    for (std::size_t pos = 0; (pos = text.find(series, pos)) != std::string::npos; pos += series.size()) {
        if ((pos == 0 || text[pos - 1] == '\n') && pos + series.size() < text.size() &&
            text[pos + series.size()] == ' ')
            return std::strtod(text.c_str() + pos + series.size() + 1, nullptr);
    }
    return std::nullopt;
}

// What each collector used here reads, relative to the tree.
std::string collector_input(const std::string& collector) {
    if (collector == "infiniband") return "sys/class/infiniband";
    if (collector == "netdev") return "proc/net/dev";
    if (collector == "pressure") return "proc/pressure";
    return "proc/" + collector;  // meminfo, loadavg, vmstat
}

// Checks a scrape against the tree: every HCA port and netdev is there, the values are the tree's (not
// the host's), every collector succeeded. Prints what is missing and why; returns false on any gap.
bool check_scrape(const std::string& body, const std::string& tree, const std::string& log) {
    bool ok = true;
    const std::string ib = tree + "/sys/class/infiniband";
    int ports = 0, ports_found = 0;
    for (const auto& dev : list_dir(ib))
        for (const auto& port : list_dir(ib + "/" + dev + "/ports")) {
            ++ports;
            const std::string series = "node_infiniband_port_data_received_bytes_total{device=\"" + dev +
                                       "\",port=\"" + port + "\"}";
            const auto value = metric_value(body, series);
            const auto raw = read_file(ib + "/" + dev + "/ports/" + port + "/counters/port_rcv_data");
            const double want = 4.0 * std::strtod(raw.c_str(), nullptr);  // 4-byte words
            if (value && *value == want) {
                ++ports_found;
            } else {
                std::printf("  MISSING/WRONG: %s (%s, tree says %.0f)\n", series.c_str(),
                            value ? std::to_string(*value).c_str() : "absent", want);
                ok = false;
            }
        }
    std::printf("  node_infiniband_port_data_received_bytes_total: %d of %d tree ports, values = tree's\n",
                ports_found, ports);

    const auto netdevs = net_dev_names(read_file(tree + "/proc/net/dev"));
    int found = 0;
    std::string excluded;
    for (const auto& name : netdevs) {
        if (metric_value(body, "node_network_receive_bytes_total{device=\"" + name + "\"}")) {
            ++found;
        } else if (name == "lo") {
            excluded = " (lo: left out by node_exporter's default --collector.netdev.device-exclude=^lo$)";
        } else {
            std::printf("  MISSING: node_network_receive_bytes_total{device=\"%s\"}\n", name.c_str());
            ok = false;
        }
    }
    std::set<std::string> tree_names(netdevs.begin(), netdevs.end());
    const std::string prefix = "\nnode_network_receive_bytes_total{device=\"";
    for (std::size_t pos = 0; (pos = body.find(prefix, pos)) != std::string::npos; ++pos) {
        const auto start = pos + prefix.size();
        const std::string name = body.substr(start, body.find('"', start) - start);
        if (!tree_names.count(name)) {
            std::printf("  NOT IN TREE: netdev %s (the host's, not the fixture's)\n", name.c_str());
            ok = false;
        }
    }
    std::printf("  node_network_receive_bytes_total: %d of %zu tree netdevs%s\n", found, netdevs.size(),
                excluded.c_str());

    // The host-stat collectors read the tree, not this machine's /proc.
    const auto load1 = std::strtod(read_file(tree + "/proc/loadavg").c_str(), nullptr);
    const auto got_load1 = metric_value(body, "node_load1");
    const std::string meminfo = read_file(tree + "/proc/meminfo");
    const auto mem_total = 1024.0 * std::strtod(meminfo.c_str() + meminfo.find(':') + 1, nullptr);
    const auto got_mem = metric_value(body, "node_memory_MemTotal_bytes");
    const bool host_ok = got_load1 && *got_load1 == load1 && got_mem && *got_mem == mem_total;
    std::printf("  node_load1 %s, node_memory_MemTotal_bytes %s: %s\n",
                got_load1 ? std::to_string(*got_load1).c_str() : "absent",
                got_mem ? std::to_string(*got_mem).c_str() : "absent",
                host_ok ? "the tree's values" : "NOT the tree's values");
    ok = ok && host_ok;

    std::string collectors;
    for (const char* c : {"infiniband", "netdev", "meminfo", "loadavg", "pressure", "vmstat"}) {
        const auto success =
            metric_value(body, std::string("node_scrape_collector_success{collector=\"") + c + "\"}");
        if (success && *success == 1) {
            collectors += std::string(collectors.empty() ? "" : " ") + c;
            continue;
        }
        ok = false;
        std::printf("  COLLECTOR %s FAILED on the tree (node_scrape_collector_success %s)\n", c,
                    success ? "0" : "absent");
        const std::string needs = tree + "/" + collector_input(c);
        std::printf("    it reads %s: %s\n", needs.c_str(),
                    access(needs.c_str(), R_OK) == 0 ? "present and readable" : std::strerror(errno));
        std::istringstream lines(log);
        bool logged = false;
        for (std::string l; std::getline(lines, l);)
            if ((l.find("level=error") != std::string::npos || l.find("level=warn") != std::string::npos) &&
                (l.find(std::string("collector=") + c) != std::string::npos ||
                 l.find(std::string("name=") + c + " ") != std::string::npos)) {
                std::printf("    log: %s\n", l.c_str());
                logged = true;
            }
        if (!logged)
            std::printf(
                "    (no error in its log: node_exporter reports a collector's \"no data\", e.g. a "
                "missing directory, only at --log.level=debug)\n");
    }
    std::printf("  collectors succeeded on the tree: %s\n", collectors.c_str());
    return ok;
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
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

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
    Cost floor, ours, ne, ne_gzip;
    std::vector<Cost> floor_rounds, ours_rounds, ne_rounds;
    long idle = -1;
    for (int round = 0; round < 2 && !g_interrupted; ++round) {
        const Cost f = floor_cost(files, opt.iterations);
        const Cost s = sampler_cost(files_only, opt.iterations, clock);
        floor_rounds.push_back(f);
        ours_rounds.push_back(s);
        if (round == 0 || f.cpu < floor.cpu) floor = f;
        if (round == 0 || s.cpu < ours.cpu) ours = s;
        if (!skipped.empty()) continue;
        std::string error;
        const Cost n = exporter.measure(opt.scrapes, false, error);
        if (n.cpu < 0) {
            skipped = "skipped: node_exporter: scrape failed: " + error;
            continue;
        }
        ne_rounds.push_back(n);
        if (round == 0 || n.cpu < ne.cpu) ne = n;
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
    std::printf("rounds, us: stallscope %s; floor %s; node_exporter %s (each figure below: the lower)\n",
                rounds(ours_rounds).c_str(), rounds(floor_rounds).c_str(),
                ne_rounds.empty() ? "-" : rounds(ne_rounds).c_str());
    std::printf("(1) stallscope file sources: %9.1f us CPU per sample   (%s read syscalls)\n", ours.cpu * 1e6,
                reads(ours).c_str());
    std::printf("(2) pread floor:             %9.1f us CPU per sample   (%s read syscalls)\n",
                floor.cpu * 1e6, reads(floor).c_str());
    if (!skipped.empty()) {
        std::printf("(3) node_exporter: %s\n", skipped.c_str());
    } else {
        std::printf(
            "(3) node_exporter scrape:    %9.1f us CPU per scrape   (%s read syscalls; %ld scrapes, "
            "%ld ticks of 1/%ld s)\n",
            ne.cpu * 1e6, reads(ne).c_str(), ne.count, ne.ticks, sysconf(_SC_CLK_TCK));
        std::printf("    same, gzip as Prometheus asks: %9.1f us CPU per scrape (%ld scrapes, %ld ticks)\n",
                    ne_gzip.cpu * 1e6, ne_gzip.count, ne_gzip.ticks);
        std::printf("    node_exporter idle, no scrapes: %ld ticks in 5 s (not subtracted)\n", idle);
    }
    if (nvml >= 0)
        std::printf("    NVML source (%s, %zu GPUs): %.1f us CPU per sample (not in the ratios)\n",
                    nvml_lib.c_str(), gpus, nvml * 1e6);
    std::printf("ratio stallscope / floor:            %6.2fx  (target <= 1.5x)\n", ours.cpu / floor.cpu);
    if (skipped.empty()) {
        std::printf(
            "ratio node_exporter / stallscope:    %6.2fx  (ARCHITECTURE target >= 5x, issue >= 10x)\n",
            ne.cpu / ours.cpu);
        std::printf("ratio node_exporter / floor:         %6.2fx\n", ne.cpu / floor.cpu);
        if (nvml >= 0)
            std::printf("ratio node_exporter / (stallscope + NVML source): %.2fx\n",
                        ne.cpu / (ours.cpu + nvml));
    }
    std::printf("peak RSS (this process):             %6.1f MiB\n",
                static_cast<double>(ru.ru_maxrss) / 1024.0);
    return 0;
}
