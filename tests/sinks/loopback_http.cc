#include "loopback_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace stallscope::test {

namespace {

sockaddr_in loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

int bound_port(int fd) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
}

std::string header(const std::string& head, const std::string& name) {
    auto pos = head.find("\r\n" + name + ":");
    if (pos == std::string::npos) return {};
    pos += name.size() + 3;
    while (pos < head.size() && head[pos] == ' ') ++pos;
    return head.substr(pos, head.find("\r\n", pos) - pos);
}

}  // namespace

LoopbackHttpServer::LoopbackHttpServer(Mode mode, int fail_first) : mode_(mode), fail_first_(fail_first) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = loopback(0);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0 || ::pipe(wake_pipe_) != 0) {
        throw std::runtime_error("loopback server: cannot listen");
    }
    port_ = bound_port(listen_fd_);
    thread_ = std::thread([this] { serve(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
    stop_ = true;
    (void)!::write(wake_pipe_[1], "x", 1);
    thread_.join();
    for (int fd : held_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_pipe_[0]);
    ::close(wake_pipe_[1]);
}

int LoopbackHttpServer::closed_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = loopback(0);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    int port = bound_port(fd);
    ::close(fd);  // bound, never listened: the port now refuses connections
    return port;
}

bool LoopbackHttpServer::wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

std::vector<HttpRequest> LoopbackHttpServer::requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
}

void LoopbackHttpServer::serve() {
    while (!stop_) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
        if (::poll(fds, 2, 200) <= 0 || !(fds[0].revents & POLLIN)) continue;
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) handle(fd);
    }
}

void LoopbackHttpServer::handle(int fd) {
    std::string data;
    std::size_t head_end = std::string::npos, need = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline && !stop_) {
        if (head_end != std::string::npos && data.size() >= need) break;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        data.append(buf, static_cast<std::size_t>(n));
        if (head_end == std::string::npos && (head_end = data.find("\r\n\r\n")) != std::string::npos) {
            need = head_end + 4 +
                   std::strtoul(header(data.substr(0, head_end), "Content-Length").c_str(), nullptr, 10);
        }
    }
    if (head_end == std::string::npos) {
        ::close(fd);
        return;
    }
    HttpRequest req;
    std::string head = data.substr(0, head_end);
    req.method = head.substr(0, head.find(' '));
    auto path_start = head.find(' ') + 1;
    req.path = head.substr(path_start, head.find(' ', path_start) - path_start);
    req.content_type = header(head, "Content-Type");
    req.body = data.substr(head_end + 4);
    std::size_t index;
    {
        std::lock_guard lock(mutex_);
        requests_.push_back(req);
        index = requests_.size();
    }
    changed_.notify_all();
    if (mode_ == Mode::hang) {
        held_.push_back(fd);
        return;
    }
    const char* status = "200 OK";
    if (static_cast<int>(index) <= fail_first_)
        status = "500 Internal Server Error";
    else if (mode_ == Mode::bad_request)
        status = "400 Bad Request";
    std::string response =
        std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!::write(fd, response.data(), response.size());
    ::close(fd);
}

}  // namespace stallscope::test
