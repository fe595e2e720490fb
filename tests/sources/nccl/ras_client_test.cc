// The RAS client against a fake RAS server on loopback: protocol, feature detection, and the time bound
// of every failure mode (refused, hung, slow, truncated, garbage).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "fake_ras_server.h"
#include "libstallscope/sources/nccl/ras_client.h"
#include "libstallscope/sources/nccl/ras_parse.h"
#include "nccl_test_util.h"

using namespace stallscope;
using namespace stallscope::nccl;
using namespace stallscope::test;
using Clock = std::chrono::steady_clock;

namespace {

RasEndpoint at(const std::string& port) {
    return RasEndpoint{"127.0.0.1", port};
}

RasLimits short_limits() {
    RasLimits l;
    l.connect = Millis(500);
    l.handshake = Millis(500);
    l.total = Millis(1500);
    return l;
}

FakeRasBehaviour reports(bool with_json) {
    FakeRasBehaviour b;
    b.text_report = nccl_fixture("ras/text_mismatch_2.30.7.txt");
    if (with_json) b.json_report = nccl_fixture("ras/json_missing_rank_2.30.7.json");
    return b;
}

}  // namespace

TEST_CASE("NCCL_RAS_ADDR forms parse to host and port") {
    CHECK(parse_ras_addr("").host == "localhost");
    CHECK(parse_ras_addr("").port == "28028");
    CHECK(parse_ras_addr("node1:29000").host == "node1");
    CHECK(parse_ras_addr("node1:29000").port == "29000");
    CHECK(parse_ras_addr("[::1]:28028").host == "::1");
    CHECK(parse_ras_addr("[::1]:28030").port == "28030");
    CHECK(parse_ras_addr("::1").host == "::1");
    CHECK(parse_ras_addr("127.0.0.1").port == "28028");
}

TEST_CASE("a RAS listener on this node owned by another user is not trusted (issue 17)") {
    FakeRasServer server(reports(true));
    RasEndpoint ep = at(server.port());
    ep.owner = getuid() + 1;  // the job user, as seen from a server someone else bound first
    const RasReply r = ras_status(ep, RasQuery{7, true, false}, short_limits());
    CHECK(r.outcome == "protocol_error");
    CHECK(r.detail.find("listener owned by uid " + std::to_string(getuid())) != std::string::npos);
    CHECK(r.body.empty());
    CHECK(server.commands().empty());  // nothing was sent to it
    RasMonitor monitor;
    std::string detail;
    CHECK(monitor.open(ep, "", false, short_limits(), detail) == "protocol_error");
    ep.owner = getuid();
    CHECK(ras_status(ep, RasQuery{7, true, false}, short_limits()).outcome == "ok");
}

TEST_CASE("the owner of a connected local TCP server is found in /proc/net/tcp") {
    FakeRasServer server(reports(true));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(server.port())));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    std::optional<uid_t> owner = local_server_owner(fd);
    REQUIRE(owner);
    CHECK(*owner == getuid());
    close(fd);
}

TEST_CASE("a >= 2.28.7 server: handshake, TIMEOUT, SET FORMAT json, STATUS read to EOF") {
    FakeRasServer server(reports(true));
    const RasReply r = ras_status(at(server.port()), RasQuery{7, true, false}, short_limits());
    INFO(r.detail);
    CHECK(r.outcome == "ok");
    CHECK(r.json);
    CHECK(r.address == "127.0.0.1:" + server.port());
    CHECK(server.commands() ==
          std::vector<std::string>{"CLIENT PROTOCOL 2", "TIMEOUT 7", "SET FORMAT json", "STATUS"});
    const auto report = parse_ras_report(r.body);  // both halves of the two-part send arrived
    CHECK(report.outcome == "ok");
    CHECK(report.communicators.size() == 1);
}

TEST_CASE("an older server answers 'ERROR: Unknown command' to SET FORMAT: the text report is used") {
    FakeRasServer server(reports(false));
    const RasReply r = ras_status(at(server.port()), RasQuery{}, short_limits());
    CHECK(r.outcome == "ok");
    CHECK_FALSE(r.json);
    const auto report = parse_ras_report(r.body);
    CHECK(report.format == "text");
    CHECK_FALSE(report.partial);
    CHECK(report.communicators.at(0).mismatches.at(0).laggards.at(0).first == 9);
}

TEST_CASE("refused: every address of the name is tried, the answer is immediate") {
    const auto start = Clock::now();
    const RasReply r = ras_status(RasEndpoint{"localhost", closed_port()}, RasQuery{}, short_limits());
    CHECK(r.outcome == "refused");
    CHECK(r.detail.find("Connection refused") != std::string::npos);
    CHECK(seconds_since(start) < 0.5);
}

TEST_CASE("a hung server (accepts, never answers) costs at most the handshake limit") {
    FakeRasBehaviour b;
    b.mode = FakeRasBehaviour::Mode::kHung;
    FakeRasServer server(b);
    const auto start = Clock::now();
    const RasReply r = ras_status(at(server.port()), RasQuery{}, short_limits());
    const double took = seconds_since(start);
    CHECK(r.outcome == "timeout");
    CHECK(r.detail.find("CLIENT PROTOCOL") != std::string::npos);
    CHECK(took >= 0.45);
    CHECK(took < 0.9);  // handshake limit 0.5 s
}

TEST_CASE("a slow server is cut at the total deadline with what arrived so far") {
    FakeRasBehaviour b = reports(false);
    b.mode = FakeRasBehaviour::Mode::kSlow;
    FakeRasServer server(b);
    const auto start = Clock::now();
    const RasReply r = ras_status(at(server.port()), RasQuery{}, short_limits());
    const double took = seconds_since(start);
    CHECK(r.outcome == "timeout");
    CHECK(!r.body.empty());
    CHECK(r.body.size() < b.text_report.size());
    CHECK(took >= 1.4);
    CHECK(took < 2.0);  // total 1.5 s
}

TEST_CASE("a report cut by a dying server is parsed as partial") {
    FakeRasBehaviour b = reports(false);
    b.mode = FakeRasBehaviour::Mode::kTruncated;
    FakeRasServer server(b);
    const RasReply r = ras_status(at(server.port()), RasQuery{}, short_limits());
    CHECK(r.outcome == "ok");  // EOF is how STATUS ends, so the parser decides
    CHECK(parse_ras_report(r.body).partial);
}

TEST_CASE("a byte cap truncates an endless reply; a non-RAS server is a protocol error") {
    FakeRasServer big(reports(false));
    RasLimits l = short_limits();
    l.max_bytes = 100;
    CHECK(ras_status(at(big.port()), RasQuery{}, l).outcome == "truncated");
    FakeRasBehaviour g;
    g.mode = FakeRasBehaviour::Mode::kGarbage;
    FakeRasServer http(g);
    const RasReply r = ras_status(at(http.port()), RasQuery{}, short_limits());
    CHECK(r.outcome == "protocol_error");
    CHECK(r.detail.find("not a RAS server") != std::string::npos);
}

TEST_CASE("cancel stops a query within ~100 ms") {
    FakeRasBehaviour b;
    b.mode = FakeRasBehaviour::Mode::kHung;
    FakeRasServer server(b);
    std::atomic<bool> cancel{false};
    RasLimits l = short_limits();
    l.handshake = Millis(5000);
    l.total = Millis(5000);
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel = true;
    });
    const auto start = Clock::now();
    const RasReply r = ras_status(at(server.port()), RasQuery{}, l, &cancel);
    stopper.join();
    CHECK(r.outcome == "timeout");
    CHECK(seconds_since(start) < 0.5);
}

TEST_CASE("MONITOR: OK then events drained without blocking; EOF closes the session") {
    FakeRasBehaviour b;
    b.monitor = true;
    b.json_report = "{}";
    const std::string all = nccl_fixture("monitor/json_all.txt");
    b.monitor_chunks = {all.substr(0, 100), all.substr(100)};
    b.close_monitor = true;
    FakeRasServer server(b);
    RasMonitor m;
    std::string detail;
    REQUIRE(m.open(at(server.port()), "lifecycle", true, short_limits(), detail) == "ok");
    std::vector<NcclRasEvent> events;
    std::string closed;
    int garbage = 0;
    const auto start = Clock::now();
    while (closed.empty() && seconds_since(start) < 3) {
        const auto t0 = Clock::now();
        for (auto& e : m.drain(1 << 20, garbage, closed)) events.push_back(std::move(e));
        CHECK(seconds_since(t0) < 0.05);  // never waits
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(closed == "connection closed by the NCCL job");
    CHECK_FALSE(m.is_open());
    REQUIRE(events.size() == 3);
    CHECK(events[2].event == "PEER_DEAD");
    CHECK(server.commands().back() == "MONITOR lifecycle");
}

TEST_CASE("MONITOR on a server older than 2.29 is 'unsupported'") {
    FakeRasServer server(reports(false));
    RasMonitor m;
    std::string detail;
    CHECK(m.open(at(server.port()), "lifecycle", true, short_limits(), detail) == "unsupported");
    CHECK_FALSE(m.is_open());
}
