// Client of the NCCL/RCCL RAS service (NCCL >= 2.24, TCP text protocol, research notes 1.2).
// Every socket operation is bounded: connect per address, each handshake reply, the whole query, and the
// bytes read. A refused, slow, truncated or hung service yields an outcome, never a blocked caller.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/nccl.h"

namespace stallscope::nccl {

using Millis = std::chrono::milliseconds;

inline constexpr uid_t kAnyOwner = static_cast<uid_t>(-1);

struct RasEndpoint {
    std::string host = "localhost";  // resolved with AF_UNSPEC; every address is tried (often ::1 only)
    std::string port = "28028";
    // Who must own the listening socket when it is on this node (the RAS port is predictable: another
    // user on a shared node could bind it first and feed fake dead ranks). kAnyOwner: our own uid, the
    // job user's (the helper runs as the user, so do the job's NCCL processes).
    uid_t owner = kAnyOwner;
};

// The uid owning the server side of connected TCP socket `fd` when that side is on this node (found in
// /proc/net/tcp or tcp6 by its local = our peer and remote = our local address); nullopt when it is
// not (a remote host) or cannot be read.
std::optional<uid_t> local_server_owner(int fd);
// NCCL_RAS_ADDR syntax: "host:port", "[v6]:port", "host" (default port); "" -> localhost:28028.
RasEndpoint parse_ras_addr(std::string_view addr);

struct RasLimits {
    Millis connect{1000};    // per resolved address (ncclras uses 1 s)
    Millis handshake{1000};  // per handshake reply line
    Millis total{11000};     // whole query: RAS TIMEOUT (5 s) + 6 s, as ncclras
    std::size_t max_bytes = 8u << 20;
};

struct RasQuery {
    int ras_timeout_seconds = 5;  // sent as `TIMEOUT n` (per-leg RAS collective timeout)
    bool try_json = true;         // `SET FORMAT json`; servers < 2.28.7 answer `ERROR: Unknown command`
    bool verbose = false;         // `VERBOSE STATUS` (crashes jobs on 2.27.x: only use on >= 2.29.2)
};

struct RasReply {
    std::string outcome;  // ok | refused | timeout | truncated | protocol_error
    std::string detail;   // why, naming the address
    std::string address;  // the address that answered ("[::1]:28028")
    bool json = false;    // the server accepted SET FORMAT json
    std::string body;     // the report as received (possibly partial on timeout/truncation)
};

// One STATUS query. `cancel` (optional) aborts within ~100 ms.
RasReply ras_status(const RasEndpoint& endpoint, const RasQuery& query, const RasLimits& limits,
                    const std::atomic<bool>* cancel = nullptr);

// A MONITOR session (NCCL >= 2.29): the connection stays open, events are drained without blocking.
class RasMonitor {
  public:
    RasMonitor() = default;
    ~RasMonitor();
    RasMonitor(const RasMonitor&) = delete;
    RasMonitor& operator=(const RasMonitor&) = delete;

    // Connects and sends `MONITOR <groups>`. Returns "ok", "unsupported" (ERROR: Unknown command, i.e.
    // NCCL < 2.29), or a RasReply-style failure outcome; `detail` says why.
    std::string open(const RasEndpoint& endpoint, const std::string& groups, bool json,
                     const RasLimits& limits, std::string& detail, const std::atomic<bool>* cancel = nullptr);
    bool is_open() const { return fd_ >= 0; }
    // Reads what is available now (no waiting), at most `max_bytes`; complete events are returned.
    // On EOF or error the session closes (`closed_reason` says why) and the caller reconnects later.
    std::vector<NcclRasEvent> drain(std::size_t max_bytes, int& garbage, std::string& closed_reason);
    void close();

  private:
    int fd_ = -1;
    std::string buffer_;
};

}  // namespace stallscope::nccl
