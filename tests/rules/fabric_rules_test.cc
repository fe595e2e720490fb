#include "libstallscope/rules/fabric_rules.h"

#include <doctest/doctest.h>

#include <set>

#include "libstallscope/rules/pfc_rules.h"
#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

Snapshot with_port(double t, CounterMap hw, CounterMap pma = {}, const std::string& state = "ACTIVE") {
    Snapshot s = at(t);
    s.rdma.push_back(port("mlx5_0", std::move(hw), std::move(pma), state));
    return s;
}

}  // namespace

TEST_CASE("CNP storm between two samples is fabric congestion naming the port and the rate") {
    auto out = run_pair(rdma_congestion_rule, with_port(0, counters({{"rp_cnp_handled", 1000}})),
                        with_port(10, counters({{"rp_cnp_handled", 13500}})));
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "fabric_congestion");
    CHECK(out[0].reason.label == kLabelSlow);
    CHECK(out[0].reason.subject == "mlx5_0/1");
    CHECK(num(out[0], "rp_cnp_handled_per_s") == 1250);
    CHECK(out[0].reason.message.find("mlx5_0/1: 1250 CNPs/s handled (threshold 500/s)") == 0);
}

TEST_CASE("ECN-marked packets received name the receiver direction; a few CNPs are not congestion") {
    auto out = run_pair(rdma_congestion_rule, with_port(0, counters({{"np_ecn_marked_roce_packets", 0}})),
                        with_port(1, counters({{"np_ecn_marked_roce_packets", 900}})));
    REQUIRE(out.size() == 1);
    CHECK(std::get<std::string>(out[0].reason.evidence.at("direction")) == "receiver");
    CHECK(run_pair(rdma_congestion_rule, with_port(0, counters({{"rp_cnp_handled", 0}})),
                   with_port(10, counters({{"rp_cnp_handled", 400}})))
              .empty());
}

TEST_CASE("congestion counters high for a lifetime but flat in the step fire nothing") {
    auto hw = counters(
        {{"rp_cnp_handled", 900'000'000}, {"out_of_sequence", 5'000'000}, {"local_ack_timeout_err", 77}});
    CHECK(run_pair(rdma_congestion_rule, with_port(0, hw), with_port(10, hw)).empty());
    CHECK(run_pair(rdma_loss_rule, with_port(0, hw), with_port(10, hw)).empty());
    CHECK(run_pair(rdma_error_rule, with_port(0, hw), with_port(10, hw)).empty());
    CHECK(run_one(rdma_congestion_rule, with_port(0, hw)).empty());  // one-shot: no delta rule
}

TEST_CASE("out-of-sequence burst per million packets: SLOW above 1 ppm, FAIL_RISK above 100 ppm") {
    auto prev = with_port(0, counters({{"out_of_sequence", 0}}), counters({{"port_rcv_packets", 0}}));
    auto slow = run_pair(
        rdma_loss_rule, prev,
        with_port(10, counters({{"out_of_sequence", 50}}), counters({{"port_rcv_packets", 10'000'000}})));
    REQUIRE(slow.size() == 1);
    CHECK(slow[0].reason.label == kLabelSlow);
    CHECK(num(slow[0], "loss_per_mpkt") == doctest::Approx(5));
    auto fail = run_pair(
        rdma_loss_rule, prev,
        with_port(10, counters({{"out_of_sequence", 5000}}), counters({{"port_rcv_packets", 10'000'000}})));
    REQUIRE(fail.size() == 1);
    CHECK(fail[0].reason.code == "fabric_packet_loss");
    CHECK(fail[0].reason.label == kLabelFailRisk);
    // below the minimum event count: one stray event on an idle port is not a ratio
    CHECK(run_pair(rdma_loss_rule, prev,
                   with_port(10, counters({{"out_of_sequence", 3}}), counters({{"port_rcv_packets", 100}})))
              .empty());
}

TEST_CASE("any ACK timeout, retry-exceeded or CQE error delta is FAIL_RISK; RNR NAKs too") {
    auto prev = with_port(0, counters({{"local_ack_timeout_err", 10},
                                       {"req_transport_retries_exceeded", 0},
                                       {"req_cqe_error", 0},
                                       {"rnr_nak_retry_err", 0}}));
    auto cur = with_port(5, counters({{"local_ack_timeout_err", 12},
                                      {"req_transport_retries_exceeded", 1},
                                      {"req_cqe_error", 4},
                                      {"rnr_nak_retry_err", 7}}));
    auto out = run_pair(rdma_error_rule, prev, cur);
    std::set<std::string> codes;
    for (const auto& f : out) {
        codes.insert(f.reason.code);
        CHECK(f.reason.label == kLabelFailRisk);
    }
    CHECK(codes == std::set<std::string>{"fabric_ack_timeout", "fabric_retry_exceeded", "fabric_qp_error",
                                         "fabric_rnr_nak"});
}

TEST_CASE("hw out_of_buffer drops are host-side backpressure, not fabric loss") {
    auto out = run_pair(rdma_error_rule, with_port(0, counters({{"out_of_buffer", 0}})),
                        with_port(10, counters({{"out_of_buffer", 50'000}})));
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "host_rx_backpressure");
    CHECK(out[0].reason.label == kLabelSlow);
}

TEST_CASE("link_downed delta is a link flap (FAIL_RISK) even when the port is ACTIVE again") {
    auto out = run_pair(link_flap_rule, with_port(0, {}, counters({{"link_downed", 2}})),
                        with_port(10, {}, counters({{"link_downed", 3}})));
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "fabric_link_flap");
    CHECK(out[0].reason.label == kLabelFailRisk);
    CHECK(run_pair(link_flap_rule, with_port(0, {}, counters({{"link_downed", 3}})),
                   with_port(10, {}, counters({{"link_downed", 3}})))
              .empty());
}

TEST_CASE("rp_cnp_ignored growing is a congestion-control misconfiguration, not a slowdown by itself") {
    auto out = run_pair(cc_misconfig_rule, with_port(0, counters({{"rp_cnp_ignored", 0}})),
                        with_port(10, counters({{"rp_cnp_ignored", 40}})));
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "fabric_cc_misconfigured");
    CHECK(out[0].reason.severity == "warning");
    CHECK(out[0].reason.label == kLabelFast);
}

TEST_CASE("a port that goes down after being ACTIVE is FAIL_RISK; one down from the start is info") {
    PortStateRule rule;
    auto out = run_series(rule, {with_port(0, {}), with_port(10, {}, {}, "DOWN")});
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "fabric_port_down");
    CHECK(out[0].reason.label == kLabelFailRisk);

    PortStateRule fresh;
    auto unused = run_series(fresh, {with_port(0, {}, {}, "DOWN"), with_port(10, {}, {}, "DOWN")});
    REQUIRE(unused.size() == 1);
    CHECK(unused[0].reason.code == "fabric_port_inactive");
    CHECK(unused[0].reason.label == kLabelFast);

    PortStateRule polling;
    auto p = with_port(0, {}, {}, "DOWN");
    p.rdma[0].phys_state = "Polling";
    CHECK(run_series(polling, {p})[0].reason.code == "fabric_port_down");
}

TEST_CASE("a port that retrains at a lower rate is degraded") {
    PortStateRule rule;
    auto slow = with_port(10, {});
    slow.rdma[0].rate_gbps = 200;
    auto out = run_series(rule, {with_port(0, {}), slow});
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "fabric_port_degraded");
}

TEST_CASE("drops on eth0 (TCP only) are reported but never blamed on the RDMA path") {
    auto mk = [](double t, std::uint64_t pkts, std::uint64_t drops) {
        Snapshot s = with_port(t, {});
        s.interfaces.push_back(iface("eth0", pkts, drops / 10, drops));
        s.interfaces.push_back(iface("lo", pkts, 0, drops));
        return s;
    };
    auto out = run_pair(interface_errors_rule, mk(0, 1000, 0), mk(10, 101'000, 5000));
    REQUIRE(out.size() == 1);  // lo skipped
    CHECK(out[0].reason.code == "network_interface_errors");
    CHECK(out[0].reason.category == "network");
    CHECK(out[0].reason.label == kLabelFast);
}

TEST_CASE("errors on the RoCE netdev behind an RDMA port are fabric errors (SLOW)") {
    auto mk = [](double t, std::uint64_t pkts, std::uint64_t errs) {
        Snapshot s = at(t);
        s.rdma.push_back(port("mlx5_0", {}, {}, "ACTIVE", "ens1f0"));
        s.interfaces.push_back(iface("ens1f0", pkts, errs));
        return s;
    };
    auto out = run_pair(interface_errors_rule, mk(0, 0, 0), mk(10, 1'000'000, 500));
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "fabric_interface_errors");
    CHECK(out[0].reason.label == kLabelSlow);
}

TEST_CASE("interface errors on a node without RDMA ports are the data path (SLOW)") {
    auto mk = [](double t, std::uint64_t pkts, std::uint64_t errs) {
        Snapshot s = at(t);
        s.interfaces.push_back(iface("eth0", pkts, errs));
        return s;
    };
    auto out = run_pair(interface_errors_rule, mk(0, 0, 0), mk(10, 1'000'000, 500));
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.label == kLabelSlow);
}

namespace {

Snapshot with_pause(double t, CounterMap pause) {
    Snapshot s = at(t);
    s.rdma.push_back(port("mlx5_0", {}, {}, "ACTIVE", "ens1f0"));
    s.interfaces.push_back(iface("ens1f0", static_cast<std::uint64_t>(t) * 1000, 0, 0, std::move(pause)));
    return s;
}

}  // namespace

TEST_CASE("rx pause occupancy above the threshold is fabric backpressure on the interface") {
    PfcRule rule;
    // 10 s interval, 2 s paused on prio 3 = 20 %
    auto out = run_series(
        rule, {with_pause(0, counters({{"rx_prio3_pause_duration", 0}, {"rx_prio3_pause", 0}})),
               with_pause(10, counters({{"rx_prio3_pause_duration", 2'000'000}, {"rx_prio3_pause", 9000}}))});
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "pfc_fabric_backpressure");
    CHECK(out[0].reason.subject == "ens1f0");
    CHECK(num(out[0], "pause_occupancy_pct") == doctest::Approx(20));
    CHECK(std::get<std::string>(out[0].reason.evidence.at("priority")) == "prio3");
}

TEST_CASE("tx pauses mean this host cannot absorb traffic; storm events are FAIL_RISK and supersede them") {
    PfcRule rule;
    auto base = counters({{"tx_prio3_pause_duration", 0}, {"tx_pause_storm_warning_events", 0}});
    auto host = run_series(
        rule, {with_pause(0, base), with_pause(10, counters({{"tx_prio3_pause_duration", 3'000'000},
                                                             {"tx_pause_storm_warning_events", 0}}))});
    REQUIRE(host.size() == 1);
    CHECK(host[0].reason.code == "host_rx_backpressure");
    PfcRule storm_rule;
    auto storm = run_series(
        storm_rule, {with_pause(0, base), with_pause(10, counters({{"tx_prio3_pause_duration", 9'000'000},
                                                                   {"tx_pause_storm_warning_events", 2}}))});
    REQUIRE(storm.size() == 1);
    CHECK(storm[0].reason.code == "pfc_pause_storm");
    CHECK(storm[0].reason.label == kLabelFailRisk);
}

TEST_CASE("pause frames without a duration counter must be sustained over consecutive intervals") {
    PfcRule rule;
    std::vector<Snapshot> series;
    for (int i = 0; i < 3; ++i)
        series.push_back(with_pause(i * 10, counters({{"rx_pause_ctrl_phy", 50'000ull * i}})));
    // interval 1: first over-threshold interval -> not yet
    PfcRule one;
    CHECK(run_series(one, {series[0], series[1]}).empty());
    auto out = run_series(rule, series);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "pfc_fabric_backpressure");
    CHECK(num(out[0], "pause_frames_per_s") == 5000);
}

TEST_CASE("pause_direction takes the worst priority and does not double count link-level frames") {
    Snapshot a = with_pause(0, counters({{"rx_prio3_pause", 0},
                                         {"rx_prio4_pause", 0},
                                         {"rx_pause_ctrl_phy", 0},
                                         {"rx_prio3_pause_duration", 0},
                                         {"rx_prio4_pause_duration", 0}}));
    Snapshot b = with_pause(1, counters({{"rx_prio3_pause", 100},
                                         {"rx_prio4_pause", 50},
                                         {"rx_pause_ctrl_phy", 150},
                                         {"rx_prio3_pause_duration", 100'000},
                                         {"rx_prio4_pause_duration", 300'000}}));
    const Rates r = compute_rates(a, b);
    const auto d = pause_direction(r, "ens1f0", "rx");
    REQUIRE(d.frames_per_s);
    CHECK(*d.frames_per_s == 150);
    REQUIRE(d.occupancy_pct);
    CHECK(*d.occupancy_pct == doctest::Approx(30));
    CHECK(d.worst_priority == "prio4");
    CHECK_FALSE(pause_direction(r, "ens1f0", "tx").frames_per_s);
}

TEST_CASE("a counter that went down (reset) is not judged: its value after the reset is a lifetime total") {
    auto out = run_pair(rdma_congestion_rule, with_port(0, counters({{"rp_cnp_handled", 9'000'000}})),
                        with_port(10, counters({{"rp_cnp_handled", 5'000'000}})));
    CHECK(out.empty());
}

TEST_CASE("A port's rows resolved once per sample are those the rules would look up themselves") {
    Snapshot a = at(0), b = at(1);
    for (Snapshot* s : {&a, &b}) {
        const std::uint64_t n = s == &a ? 1 : 5;
        s->rdma.push_back(port("mlx5_10", counters({{"np_cnp_sent", n}}), counters({{"link_downed", n}}),
                               "ACTIVE", "ens10"));
        s->rdma.push_back(port("mlx5_2", counters({{"out_of_buffer", n}})));  // no PMA counters, no netdev
        s->rdma.back().port = 2;
        s->interfaces.push_back(iface("ens10", 100 * n));
    }
    const Rates r = compute_rates(a, b);
    std::vector<PortRows> rows{PortRows{"stale key, longer than the small-string buffer"}};
    port_rows_into(b, &r, rows);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].key == b.rdma[0].key());
    CHECK(rows[1].key == "mlx5_2/2");
    CHECK(rows[0].hw == &r.rdma_hw_counters.find("mlx5_10/1")->second);
    CHECK(rows[0].counters == &r.rdma_counters.find("mlx5_10/1")->second);
    CHECK(rows[0].netdev == &r.interfaces.find("ens10")->second);
    CHECK(rows[1].hw == &r.rdma_hw_counters.find("mlx5_2/2")->second);
    CHECK(rows[1].counters == nullptr);
    CHECK(rows[1].netdev == nullptr);
    Snapshot reversed = b;  // ports listed out of the tables' order: found all the same
    std::swap(reversed.rdma[0], reversed.rdma[1]);
    port_rows_into(reversed, &r, rows);
    CHECK(rows[0].hw == &r.rdma_hw_counters.find("mlx5_2/2")->second);
    CHECK(rows[1].hw == &r.rdma_hw_counters.find("mlx5_10/1")->second);
    CHECK(rows[1].counters == &r.rdma_counters.find("mlx5_10/1")->second);
    CHECK(rows[1].netdev == &r.interfaces.find("ens10")->second);
    port_rows_into(b, nullptr, rows);  // first sample: keys, no rows
    CHECK(rows[0].key == "mlx5_10/1");
    CHECK(rows[0].hw == nullptr);
    // The rules give the same findings with the profiler's rows as with their own.
    const Thresholds t;
    port_rows_into(b, &r, rows);
    std::size_t fired = 0;
    for (auto rule :
         {link_flap_rule, rdma_error_rule, rdma_congestion_rule, rdma_loss_rule, cc_misconfig_rule}) {
        Findings own, given;
        rule(RuleInput{b, nullptr, &r, t}, own);
        rule(RuleInput{b, nullptr, &r, t, nullptr, std::nullopt, &rows}, given);
        REQUIRE(own.size() == given.size());
        for (std::size_t i = 0; i < own.size(); ++i) CHECK(own[i].reason.message == given[i].reason.message);
        fired += own.size();
    }
    CHECK(fired > 0);  // link_downed moved: the flap rule fires
}

// The port findings are written into kept slots (Findings::add) since they fire every sample while a
// port is down or the fabric congested: their whole text and evidence, pinned as make_finding wrote them.
TEST_CASE("port state and congestion findings: whole message and evidence, sample after sample") {
    const auto two_ports = [](double t, std::uint64_t moved, const std::string& second_state) {
        Snapshot s = at(t);
        s.rdma.push_back(
            port("mlx5_0", counters({{"rp_cnp_handled", moved * 2}, {"np_ecn_marked_roce_packets", moved}}),
                 counters({{"port_rcv_packets", moved}, {"port_xmit_data", moved}})));
        s.rdma.push_back(port("mlx5_1", {}, {}, second_state));
        return s;
    };
    PortStateRule rail, down;
    Findings out;
    for (int i = 0; i < 3; ++i) {
        CAPTURE(i);
        const Snapshot prev = two_ports(i * 10, i * 100000, "DOWN"),
                       cur = two_ports(i * 10 + 10, (i + 1) * 100000, "DOWN");
        const Rates rates = compute_rates(prev, cur);
        const RuleInput in{cur, &prev, &rates, Thresholds{}};
        out.clear();
        rail.evaluate(in, out);
        rdma_congestion_rule(in, out);
        REQUIRE(out.size() == 2);
        CHECK(out[0].reason.code == "fabric_rail_down");
        CHECK(out[0].reason.message ==
              "mlx5_1/1: port DOWN (Disabled) since the step started while 1 sibling Ethernet port(s) carry "
              "traffic (mlx5_0/1) — a rail is missing, collectives on this node run on the remaining ones");
        CHECK(evidence_text(out[0].reason.evidence) ==
              "busy_sibling_ports=mlx5_0/1;phys_state=Disabled;ports_same_link_layer=2;state=DOWN;");
        CHECK(out[1].reason.message ==
              "mlx5_0/1: 20000 CNPs/s handled (threshold 500/s) — RoCE congestion control is slowing this "
              "host's senders; 10000 ECN-marked packets/s received (threshold 500/s) — the fabric path into "
              "this host is congested");
        CHECK(evidence_text(out[1].reason.evidence) ==
              "cnp_handled_per_s_threshold=500;direction=both;ecn_marked_per_s_threshold=500;interval_"
              "seconds=10;"
              "np_ecn_marked_roce_packets_per_s=10000;rp_cnp_handled_per_s=20000;");
        CHECK(out[1].score == 40);
    }
    Snapshot up = two_ports(0, 0, "ACTIVE"), gone = two_ports(10, 0, "DOWN");
    gone.rdma[1].phys_state = "Polling";
    out.clear();
    down.evaluate(RuleInput{up, nullptr, nullptr, Thresholds{}}, out);
    down.evaluate(RuleInput{gone, nullptr, nullptr, Thresholds{}}, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.message ==
          "mlx5_1/1: port is DOWN (Polling) after being ACTIVE in this step; traffic over it has stopped");
    CHECK(evidence_text(out[0].reason.evidence) == "phys_state=Polling;state=DOWN;");
    PortStateRule inactive;
    out.clear();
    Snapshot unused = two_ports(0, 0, "DOWN");
    unused.rdma[1].link_layer = "InfiniBand";
    inactive.evaluate(RuleInput{unused, nullptr, nullptr, Thresholds{}}, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.message ==
          "mlx5_1/1: port DOWN (Disabled) since the step started — not cabled or not used");
}
