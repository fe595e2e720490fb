// A fake NCCL RAS service on 127.0.0.1 (ephemeral port) speaking the real protocol (research notes 1.2):
// `CLIENT PROTOCOL` -> `SERVER PROTOCOL 2`, `TIMEOUT n` -> `OK`, `SET FORMAT json` -> `OK` or
// `ERROR: Unknown command ...`, `STATUS` -> the report in two sends then close, `MONITOR` -> `OK` + events.
// Misbehaviours for the client's time bounds: slow, truncated, hung, garbage.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace stallscope::test {

struct FakeRasBehaviour {
    std::string text_report, json_report;     // json_report empty: the server predates SET FORMAT (< 2.28.7)
    bool monitor = false;                     // MONITOR supported (>= 2.29)
    std::vector<std::string> monitor_chunks;  // sent after OK, 50 ms apart
    bool close_monitor = false;               // close the MONITOR session after the chunks
    enum class Mode { kNormal, kHung, kSlow, kTruncated, kGarbage } mode = Mode::kNormal;
};

class FakeRasServer {
  public:
    explicit FakeRasServer(FakeRasBehaviour behaviour);
    ~FakeRasServer();
    FakeRasServer(const FakeRasServer&) = delete;
    FakeRasServer& operator=(const FakeRasServer&) = delete;
    std::string port() const { return std::to_string(port_); }
    int connections() const { return connections_.load(); }
    std::vector<std::string> commands() const;  // every command line received, in order

  private:
    void serve();
    void session(int fd);
    bool sleep_ms(int ms) const;  // false when stopping

    FakeRasBehaviour b_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> connections_{0};
    mutable std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
    std::vector<std::string> commands_;
    std::vector<std::thread> sessions_;
    std::thread thread_;
};

// A loopback port with nothing listening (bound, then closed): connecting is refused.
std::string closed_port();

}  // namespace stallscope::test
