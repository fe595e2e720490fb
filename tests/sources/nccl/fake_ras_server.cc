#include "fake_ras_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace stallscope::test {
namespace {

void send_all(int fd, const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
        const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return;
        off += static_cast<std::size_t>(n);
    }
}

int bound_socket(int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("bind");
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}

}  // namespace

std::string closed_port() {
    int port = 0;
    const int fd = bound_socket(port);
    ::close(fd);
    return std::to_string(port);
}

FakeRasServer::FakeRasServer(FakeRasBehaviour behaviour) : b_(std::move(behaviour)) {
    listen_fd_ = bound_socket(port_);
    ::listen(listen_fd_, 16);
    thread_ = std::thread([this] { serve(); });
}

FakeRasServer::~FakeRasServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
}

std::vector<std::string> FakeRasServer::commands() const {
    while (lock_.test_and_set()) {
    }
    auto copy = commands_;
    lock_.clear();
    return copy;
}

bool FakeRasServer::sleep_ms(int ms) const {
    for (int i = 0; i < ms / 10; ++i) {
        if (stop_) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return !stop_;
}

void FakeRasServer::serve() {
    while (!stop_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        ++connections_;
        sessions_.emplace_back([this, fd] {  // one thread per client: a MONITOR session stays open
            session(fd);
            ::close(fd);
        });
    }
    for (auto& t : sessions_) t.join();
}

void FakeRasServer::session(int fd) {
    if (b_.mode == FakeRasBehaviour::Mode::kHung) {  // accepts, never answers
        sleep_ms(60000);
        return;
    }
    if (b_.mode == FakeRasBehaviour::Mode::kGarbage) {
        send_all(fd, "HTTP/1.1 400 Bad Request\r\n\r\n");
        return;
    }
    std::string buf;
    bool json = false;
    char chunk[1024];
    while (!stop_) {
        const auto nl = buf.find('\n');
        if (nl == std::string::npos) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) return;
            buf.append(chunk, static_cast<std::size_t>(n));
            continue;
        }
        std::string cmd = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        if (!cmd.empty() && cmd.back() == '\r') cmd.pop_back();
        while (lock_.test_and_set()) {
        }
        commands_.push_back(cmd);
        lock_.clear();
        if (cmd.rfind("CLIENT PROTOCOL", 0) == 0) {
            send_all(fd, "SERVER PROTOCOL 2\n");
        } else if (cmd.rfind("TIMEOUT ", 0) == 0) {
            send_all(fd, "OK\n");
        } else if (cmd == "SET FORMAT json" && !b_.json_report.empty()) {
            json = true;
            send_all(fd, "OK\n");
        } else if (cmd == "STATUS" || cmd == "VERBOSE STATUS") {
            const std::string report = json ? b_.json_report : b_.text_report;
            const std::size_t half = report.size() / 2;
            if (b_.mode == FakeRasBehaviour::Mode::kSlow) {  // 64 bytes every 200 ms: never done in time
                for (std::size_t off = 0; off < report.size() && sleep_ms(200); off += 64)
                    send_all(fd, report.substr(off, 64));
                return;
            }
            send_all(fd, report.substr(0, half));                       // before the RAS collective ...
            if (b_.mode == FakeRasBehaviour::Mode::kTruncated) return;  // ... the process dies
            if (!sleep_ms(50)) return;
            send_all(fd, report.substr(half));  // ... after it
            return;                             // STATUS ends the session: EOF
        } else if (cmd.rfind("MONITOR", 0) == 0 && b_.monitor) {
            send_all(fd, "OK\n");
            for (const auto& c : b_.monitor_chunks) {
                if (!sleep_ms(50)) return;
                send_all(fd, c);
            }
            if (b_.close_monitor) return;
            sleep_ms(60000);
            return;
        } else {
            send_all(fd, "ERROR: Unknown command " + cmd + "\n");
        }
    }
}

}  // namespace stallscope::test
