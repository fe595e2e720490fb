#include "bench/node_exporter_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

namespace stallscope::bench {

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

namespace {

constexpr long kMinTicks = 200;  // clock ticks per measured round: tick resolution <= 0.5 %
constexpr double kMaxRoundSeconds = 120;

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

}  // namespace

NodeExporter::NodeExporter() = default;

NodeExporter::~NodeExporter() {
    stop();
}

std::string NodeExporter::start(const std::string& binary, const std::string& tree,
                                const std::string& log_path) {
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

void NodeExporter::stop() {
    client_.reset();
    if (pid_ > 0) {
        kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    pid_ = -1;
}

std::string NodeExporter::command_line() const {
    std::string out;
    for (const auto& a : args_) out += (out.empty() ? "" : " ") + a;
    return out;
}

std::string NodeExporter::log() const {
    return read_file(log_path_);
}

std::optional<std::string> NodeExporter::scrape(bool gzip, std::string& error, std::string* encoding) {
    return client_->get("/metrics", gzip, error, encoding);
}

Cost NodeExporter::measure(int min_scrapes, bool gzip, std::string& error) {
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

long NodeExporter::idle_ticks(double seconds) {
    const long before = cpu_ticks_of(pid_);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return cpu_ticks_of(pid_) - before;
}

namespace {

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

}  // namespace

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

}  // namespace stallscope::bench
