#include "libstallscope/sources/nccl/ras_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "libstallscope/sources/nccl/ras_parse.h"

namespace stallscope::nccl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Millis kSlice{100};  // longest single wait, so `cancel` is honoured quickly

enum class Io { kOk, kTimeout, kEof, kError, kCancelled, kTooBig };

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    int release() { return std::exchange(fd, -1); }
};

// Waits for `events` on fd until `until`; kTimeout when it passes.
Io wait_for(int fd, short events, Clock::time_point until, const std::atomic<bool>* cancel) {
    while (true) {
        if (cancel && cancel->load()) return Io::kCancelled;
        const auto left = std::chrono::duration_cast<Millis>(until - Clock::now());
        if (left.count() <= 0) return Io::kTimeout;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min(left, kSlice).count()) + 1);
        if (n > 0) return Io::kOk;
        if (n < 0 && errno != EINTR) return Io::kError;
    }
}

std::string address_text(const sockaddr* sa) {
    char host[NI_MAXHOST] = {}, port[NI_MAXSERV] = {};
    if (::getnameinfo(sa, sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in), host,
                      sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return "?";
    return sa->sa_family == AF_INET6 ? "[" + std::string(host) + "]:" + port : std::string(host) + ":" + port;
}

// "0100007F:6D8C" / "00000000000000000000000001000000:6D8C": an address as /proc/net/tcp{,6} prints it
// (each 32-bit word of the network-order address as the host reads it, %08X; the port %04X).
std::string proc_net_address(const sockaddr_storage& ss) {
    char text[64] = {};
    if (ss.ss_family == AF_INET) {
        const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
        std::uint32_t word = 0;
        std::memcpy(&word, &in.sin_addr, 4);
        std::snprintf(text, sizeof text, "%08X:%04X", word, ntohs(in.sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
        std::uint32_t w[4];
        std::memcpy(w, &in6.sin6_addr, 16);
        std::snprintf(text, sizeof text, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3],
                      ntohs(in6.sin6_port));
    }
    return text;
}

// Tries every address `host` resolves to (AF_UNSPEC), each with its own connect timeout.
std::string connect_any(const RasEndpoint& ep, Millis connect_timeout, Clock::time_point deadline,
                        const std::atomic<bool>* cancel, Fd& out, std::string& address, std::string& detail) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    if (const int rc = ::getaddrinfo(ep.host.c_str(), ep.port.c_str(), &hints, &list); rc != 0) {
        detail = "cannot resolve " + ep.host + ":" + ep.port + ": " + ::gai_strerror(rc);
        return "refused";
    }
    bool all_refused = true;
    for (addrinfo* ai = list; ai; ai = ai->ai_next) {
        const std::string where = address_text(ai->ai_addr);
        Fd s{::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol)};
        if (s.fd < 0) continue;
        int err = 0;
        if (::connect(s.fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                const Io w =
                    wait_for(s.fd, POLLOUT, std::min(deadline, Clock::now() + connect_timeout), cancel);
                if (w == Io::kOk) {
                    socklen_t len = sizeof err;
                    ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                } else {
                    err = ETIMEDOUT;
                }
            }
        }
        if (err == 0) {
            ::freeaddrinfo(list);
            out.fd = s.release();
            address = where;
            return "ok";
        }
        if (err != ECONNREFUSED) all_refused = false;
        detail += (detail.empty() ? "" : "; ") + where + ": " + std::strerror(err);
    }
    ::freeaddrinfo(list);
    if (detail.empty()) detail = ep.host + ":" + ep.port + ": no usable address";
    return all_refused ? "refused" : "timeout";
}

Io write_all(int fd, std::string_view data, Clock::time_point until, const std::atomic<bool>* cancel) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Io::kError;
        if (const Io w = wait_for(fd, POLLOUT, until, cancel); w != Io::kOk) return w;
    }
    return Io::kOk;
}

// Appends what arrives before `until` to `buf`; stops at EOF, at `cap` bytes, or (when line_only) once
// `buf` holds a newline.
Io read_some(int fd, std::string& buf, Clock::time_point until, std::size_t cap, bool line_only,
             const std::atomic<bool>* cancel) {
    char chunk[16384];
    while (!(line_only && buf.find('\n') != std::string::npos)) {
        if (buf.size() >= cap) return Io::kTooBig;
        if (const Io w = wait_for(fd, POLLIN, until, cancel); w != Io::kOk) return w;
        const ssize_t n = ::recv(fd, chunk, std::min(sizeof chunk, cap - buf.size()), 0);
        if (n == 0) return Io::kEof;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
            return Io::kError;
        }
        buf.append(chunk, static_cast<std::size_t>(n));
    }
    return Io::kOk;
}

std::string take_line(std::string& buf) {
    const auto nl = buf.find('\n');
    std::string line = buf.substr(0, nl);
    buf.erase(0, nl == std::string::npos ? buf.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
}

const char* io_outcome(Io io) {
    switch (io) {
        case Io::kTimeout:
        case Io::kCancelled:
            return "timeout";
        case Io::kEof:
        case Io::kTooBig:
            return "truncated";
        default:
            return "protocol_error";
    }
}

const char* io_text(Io io) {
    switch (io) {
        case Io::kTimeout:
            return "no answer in time";
        case Io::kCancelled:
            return "cancelled";
        case Io::kEof:
            return "connection closed";
        case Io::kTooBig:
            return "reply over the byte cap";
        default:
            return std::strerror(errno);
    }
}

// Sends one command and reads its one-line reply within the handshake limit.
Io command(int fd, const std::string& cmd, std::string& buf, std::string& reply, const RasLimits& lim,
           Clock::time_point deadline, const std::atomic<bool>* cancel) {
    const auto until = std::min(deadline, Clock::now() + lim.handshake);
    if (const Io w = write_all(fd, cmd + "\n", until, cancel); w != Io::kOk) return w;
    const Io r = read_some(fd, buf, until, 4096, /*line_only=*/true, cancel);
    if (r != Io::kOk && buf.find('\n') == std::string::npos) return r;
    reply = take_line(buf);
    return Io::kOk;
}

// Connect + `CLIENT PROTOCOL 2` (+ `SET FORMAT json`): shared by STATUS and MONITOR.
std::string handshake(const RasEndpoint& ep, const RasLimits& lim, Clock::time_point deadline, bool try_json,
                      int ras_timeout, const std::atomic<bool>* cancel, Fd& fd, std::string& buf,
                      RasReply& reply) {
    const std::string c = connect_any(ep, lim.connect, deadline, cancel, fd, reply.address, reply.detail);
    if (c != "ok") return c;
    // Before sending or trusting a byte: a listener on this node must be the job user's.
    const uid_t expected = ep.owner == kAnyOwner ? ::getuid() : ep.owner;
    if (const std::optional<uid_t> owner = local_server_owner(fd.fd); owner && *owner != expected) {
        reply.detail = reply.address + ": listener owned by uid " + std::to_string(*owner) + ", not uid " +
                       std::to_string(expected) + " (the job user): not trusted";
        return "protocol_error";
    }
    std::string line;
    auto fail = [&](Io io, const std::string& what) {
        reply.detail = reply.address + ": " + what + ": " + io_text(io);
        return std::string(io == Io::kEof ? "protocol_error" : io_outcome(io));
    };
    if (Io io = command(fd.fd, "CLIENT PROTOCOL 2", buf, line, lim, deadline, cancel); io != Io::kOk)
        return fail(io, "CLIENT PROTOCOL");
    if (line.rfind("SERVER PROTOCOL", 0) != 0) {
        reply.detail = reply.address + ": not a RAS server (answered '" + line.substr(0, 80) + "')";
        return "protocol_error";
    }
    if (ras_timeout >= 0) {
        if (Io io =
                command(fd.fd, "TIMEOUT " + std::to_string(ras_timeout), buf, line, lim, deadline, cancel);
            io != Io::kOk)
            return fail(io, "TIMEOUT");
    }
    if (try_json) {
        if (Io io = command(fd.fd, "SET FORMAT json", buf, line, lim, deadline, cancel); io != Io::kOk)
            return fail(io, "SET FORMAT");
        reply.json = line == "OK";  // `ERROR: Unknown command SET FORMAT json` before 2.28.7
    }
    return "ok";
}

}  // namespace

std::optional<uid_t> local_server_owner(int fd) {
    sockaddr_storage ours{}, theirs{};
    socklen_t a = sizeof ours, b = sizeof theirs;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ours), &a) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &b) != 0)
        return std::nullopt;
    const std::string server = proc_net_address(theirs), client = proc_net_address(ours);
    if (server.empty()) return std::nullopt;
    // The server side: its local address is our peer, its remote address is us.
    std::ifstream in(ours.ss_family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits, uid;
        if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid)) continue;
        if (local != server || remote != client) continue;
        uid_t owner = 0;
        if (std::from_chars(uid.data(), uid.data() + uid.size(), owner).ec != std::errc())
            return std::nullopt;
        return owner;
    }
    return std::nullopt;
}

RasEndpoint parse_ras_addr(std::string_view addr) {
    RasEndpoint ep;
    if (addr.empty()) return ep;
    if (addr.front() == '[') {
        const auto close = addr.find(']');
        if (close == std::string_view::npos) return ep;
        ep.host = std::string(addr.substr(1, close - 1));
        if (close + 1 < addr.size() && addr[close + 1] == ':') ep.port = std::string(addr.substr(close + 2));
        return ep;
    }
    const auto colon = addr.rfind(':');
    if (colon == std::string_view::npos || addr.find(':') != colon) {
        ep.host = std::string(addr);  // plain host, or a bare IPv6 literal
        return ep;
    }
    if (colon > 0) ep.host = std::string(addr.substr(0, colon));
    if (colon + 1 < addr.size()) ep.port = std::string(addr.substr(colon + 1));
    return ep;
}

RasReply ras_status(const RasEndpoint& ep, const RasQuery& q, const RasLimits& lim,
                    const std::atomic<bool>* cancel) {
    RasReply reply;
    const auto deadline = Clock::now() + lim.total;
    Fd fd;
    std::string buf;
    reply.outcome = handshake(ep, lim, deadline, q.try_json, q.ras_timeout_seconds, cancel, fd, buf, reply);
    if (reply.outcome != "ok") return reply;
    if (Io w = write_all(fd.fd, q.verbose ? "VERBOSE STATUS\n" : "STATUS\n", deadline, cancel);
        w != Io::kOk) {
        reply.outcome = io_outcome(w);
        reply.detail = reply.address + ": STATUS: " + io_text(w);
        return reply;
    }
    // The report comes in several sends (before and after the RAS collective) and ends with EOF.
    const Io r = read_some(fd.fd, buf, deadline, lim.max_bytes, /*line_only=*/false, cancel);
    reply.body = std::move(buf);
    if (r == Io::kEof) return reply;  // complete: the server closes after STATUS
    reply.outcome = r == Io::kTooBig ? "truncated" : io_outcome(r);
    reply.detail =
        reply.address + ": STATUS reply after " + std::to_string(reply.body.size()) + " bytes: " + io_text(r);
    return reply;
}

RasMonitor::~RasMonitor() {
    close();
}

void RasMonitor::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buffer_.clear();
}

std::string RasMonitor::open(const RasEndpoint& ep, const std::string& groups, bool json,
                             const RasLimits& lim, std::string& detail, const std::atomic<bool>* cancel) {
    close();
    RasReply reply;
    Fd fd;
    const auto deadline = Clock::now() + lim.total;
    std::string outcome = handshake(ep, lim, deadline, json, -1, cancel, fd, buffer_, reply);
    detail = reply.detail;
    if (outcome != "ok") return outcome;
    std::string line;
    const std::string cmd = groups.empty() ? "MONITOR" : "MONITOR " + groups;
    if (Io io = command(fd.fd, cmd, buffer_, line, lim, deadline, cancel); io != Io::kOk) {
        detail = reply.address + ": MONITOR: " + io_text(io);
        return io_outcome(io);
    }
    if (line != "OK") {
        detail = reply.address + ": MONITOR refused: '" + line.substr(0, 80) + "'";
        return line.rfind("ERROR: Unknown command", 0) == 0 ? "unsupported" : "protocol_error";
    }
    fd_ = fd.release();
    return "ok";
}

std::vector<NcclRasEvent> RasMonitor::drain(std::size_t max_bytes, int& garbage, std::string& closed_reason) {
    if (fd_ < 0) return {};
    char chunk[16384];
    std::size_t got = 0;
    while (got < max_bytes) {
        const ssize_t n = ::recv(fd_, chunk, std::min(sizeof chunk, max_bytes - got), MSG_DONTWAIT);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
            got += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0 && errno == EINTR) continue;
        closed_reason = n == 0 ? "connection closed by the NCCL job" : std::strerror(errno);
        break;
    }
    auto events = take_monitor_events(buffer_, garbage);
    if (buffer_.size() > (1u << 20)) {  // an event never ends: drop it rather than grow without bound
        buffer_.clear();
        ++garbage;
    }
    if (!closed_reason.empty()) close();
    return events;
}

}  // namespace stallscope::nccl
