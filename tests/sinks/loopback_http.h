// A tiny HTTP/1.1 server on 127.0.0.1 for the Alertmanager sink tests: records each request and
// answers per mode (200, 500 for the first N, 400, or never -- a hung server). One thread, poll()-driven,
// every wait bounded; the destructor stops it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stallscope::test {

struct HttpRequest {
    std::string method, path, content_type, body;
};

class LoopbackHttpServer {
  public:
    enum class Mode { ok, bad_request, hang };
    explicit LoopbackHttpServer(Mode mode = Mode::ok, int fail_first = 0);
    ~LoopbackHttpServer();

    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout);
    std::vector<HttpRequest> requests() const;

    // A loopback port with nothing listening (connections are refused).
    static int closed_port();

  private:
    void serve();
    void handle(int fd);

    Mode mode_;
    int fail_first_;
    int listen_fd_ = -1, wake_pipe_[2] = {-1, -1}, port_ = 0;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<HttpRequest> requests_;
    std::vector<int> held_;  // hang mode: connections never answered
    std::thread thread_;
};

}  // namespace stallscope::test
