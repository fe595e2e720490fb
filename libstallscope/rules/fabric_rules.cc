#include "libstallscope/rules/fabric_rules.h"

#include <algorithm>

namespace stallscope {
namespace {

double per_s(double delta, const Rates& r) {
    return r.interval_seconds > 0 ? delta / r.interval_seconds : 0;
}

// The first of the named counters that has a delta (ports name their packet counter differently).
std::optional<double> first_delta(const DeltaRow* row, std::initializer_list<CounterName> names) {
    for (const CounterName n : names)
        if (auto d = delta_of(row, n)) return static_cast<double>(d->delta);
    return std::nullopt;
}

// ACTIVE ports of the same link layer as `port` that moved data in the last interval: the rails the
// job uses. A port with no such sibling is an unused or uncabled port, not a missing rail.
std::vector<const RdmaPort*> busy_siblings(const RuleInput& in, const RdmaPort& port) {
    std::vector<const RdmaPort*> busy;
    if (!in.rates) return busy;
    std::vector<PortRows> local;
    const std::vector<PortRows>& rows = port_rows(in, local);
    for (std::size_t i = 0; i < in.cur.rdma.size(); ++i) {
        const RdmaPort& p = in.cur.rdma[i];
        if (&p == &port || p.state != "ACTIVE" || p.link_layer != port.link_layer) continue;
        const auto moved =
            sum_deltas(rows[i].counters, {"port_xmit_data", "port_rcv_data", "port_xmit_packets",
                                          "port_rcv_packets", "unicast_xmit_packets", "unicast_rcv_packets"});
        if (moved && *moved > 0) busy.push_back(&p);
    }
    return busy;
}

}  // namespace

bool is_rdma_netdev(const Snapshot& s, const std::string& iface) {
    return std::any_of(s.rdma.begin(), s.rdma.end(),
                       [&](const RdmaPort& p) { return !p.netdev.empty() && p.netdev == iface; });
}

void rdma_congestion_rule(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    const Rates& r = *in.rates;
    std::vector<PortRows> local;
    for (const PortRows& rows : port_rows(in, local)) {
        const std::string& key = rows.key;
        const DeltaRow* hw = rows.hw;
        const auto handled = sum_deltas(hw, {"rp_cnp_handled"});
        const auto marked = sum_deltas(hw, {"np_ecn_marked_roce_packets"});
        const auto sent = sum_deltas(hw, {"np_cnp_sent"});
        const double handled_s = per_s(handled.value_or(0), r);
        const double ecn_s = per_s(std::max(marked.value_or(0), sent.value_or(0)), r);
        const bool as_sender = handled && handled_s >= in.t.cnp_handled_per_s;
        const bool as_receiver = (marked || sent) && ecn_s >= in.t.ecn_marked_per_s;
        if (!as_sender && !as_receiver) continue;
        // A congested fabric stays congested for hours, on every port: written into the kept slots.
        Finding& f =
            out.add(rule::kFabricCongestion, Severity::kWarning, SubjectKind::kPort, 0, Hint::kNetwork);
        f.reason.subject.assign(key);
        if (as_sender) f.score = handled_s / std::max(in.t.cnp_handled_per_s, 1e-9);
        if (as_receiver) f.score = std::max(f.score, ecn_s / std::max(in.t.ecn_marked_per_s, 1e-9));
        if (!out.details_wanted(f)) continue;
        Evidence& ev = f.reason.evidence;
        ev["interval_seconds"] = r.interval_seconds;
        if (handled) ev["rp_cnp_handled_per_s"] = handled_s;
        if (marked) ev["np_ecn_marked_roce_packets_per_s"] = per_s(*marked, r);
        if (sent) ev["np_cnp_sent_per_s"] = per_s(*sent, r);
        ev["cnp_handled_per_s_threshold"] = in.t.cnp_handled_per_s;
        ev["ecn_marked_per_s_threshold"] = in.t.ecn_marked_per_s;
        std::string& msg = f.reason.message;
        if (as_sender) {
            append_parts(msg, key, ": ", fmt_num(handled_s), " CNPs/s handled (threshold ",
                         fmt_num(in.t.cnp_handled_per_s),
                         "/s) — RoCE congestion control is slowing this host's senders");
        }
        if (as_receiver) {
            if (msg.empty())
                append_parts(msg, key, ": ");
            else
                msg += "; ";
            append_parts(msg, fmt_num(ecn_s), " ECN-marked packets/s received (threshold ",
                         fmt_num(in.t.ecn_marked_per_s), "/s) — the fabric path into this host is congested");
        }
        ev["direction"] = std::string(as_sender && as_receiver ? "both" : as_sender ? "sender" : "receiver");
    }
}

void rdma_loss_rule(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    const Rates& r = *in.rates;
    std::vector<PortRows> local;
    for (const PortRows& rows : port_rows(in, local)) {
        const std::string& key = rows.key;
        const DeltaRow* hw = rows.hw;
        static constexpr CounterName kLoss[] = {"out_of_sequence", "packet_seq_err", "duplicate_request",
                                                "implied_nak_seq_err"};
        const auto loss = sum_deltas(hw, {kLoss[0], kLoss[1], kLoss[2], kLoss[3]});
        if (!loss || *loss < in.t.rdma_loss_min_events || *loss <= 0) continue;
        const auto packets = first_delta(rows.counters, {"port_rcv_packets", "unicast_rcv_packets"});
        Evidence ev{{"loss_events", *loss}, {"interval_seconds", r.interval_seconds}};
        for (const CounterName n : kLoss)
            if (auto d = delta_of(hw, n)) ev[std::string(n.name())] = static_cast<double>(d->delta);
        Label label = Label::kSlow;
        std::string msg;
        double score = 1;
        if (packets && *packets > 0) {
            const double ppm = *loss / *packets * 1e6;
            ev["received_packets"] = *packets;
            ev["loss_per_mpkt"] = ppm;
            ev["slow_per_mpkt_threshold"] = in.t.rdma_loss_slow_per_mpkt;
            ev["fail_per_mpkt_threshold"] = in.t.rdma_loss_fail_per_mpkt;
            if (ppm >= in.t.rdma_loss_fail_per_mpkt) {
                label = Label::kFailRisk;
                score = ppm / std::max(in.t.rdma_loss_fail_per_mpkt, 1e-9);
            } else if (ppm >= in.t.rdma_loss_slow_per_mpkt) {
                label = Label::kSlow;
                score = ppm / std::max(in.t.rdma_loss_slow_per_mpkt, 1e-9);
            } else {
                continue;
            }
            msg = key + ": " + fmt_num(ppm) + " lost/out-of-order packets per million received (" +
                  fmt_num(*loss) + " events; SLOW at " + fmt_num(in.t.rdma_loss_slow_per_mpkt) +
                  ", FAIL_RISK at " + fmt_num(in.t.rdma_loss_fail_per_mpkt) +
                  ") — go-back-N retransmits on the RDMA path";
        } else {
            const double rate = per_s(*loss, r);
            ev["loss_per_s"] = rate;
            ev["fail_per_s_threshold"] = in.t.rdma_loss_fail_per_s;
            label = rate >= in.t.rdma_loss_fail_per_s ? Label::kFailRisk : Label::kSlow;
            score = std::max(1.0, rate / std::max(in.t.rdma_loss_fail_per_s, 1e-9));
            msg = key + ": " + fmt_num(rate) +
                  " lost/out-of-order packets/s (no packet counter to normalise; " + "FAIL_RISK at " +
                  fmt_num(in.t.rdma_loss_fail_per_s) + "/s) — retransmits on the RDMA path";
        }
        const Severity severity = label == Label::kFailRisk ? Severity::kCritical : Severity::kWarning;
        out.push_back(make_finding(rule::kFabricPacketLoss, label, severity, key, SubjectKind::kPort,
                                   std::move(msg), std::move(ev), score, Hint::kNetwork));
    }
}

void rdma_error_rule(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    const Rates& r = *in.rates;
    struct Check {
        const RuleDescriptor& rule;
        std::vector<CounterName> counters;
        const char* what;
    };
    static const Check checks[] = {
        {rule::kFabricAckTimeout,
         {"local_ack_timeout_err", "roce_adp_retrans_to"},
         "ACK timeouts — each one stalls the queue pair for a full transport timeout"},
        {rule::kFabricRetryExceeded,
         {"req_tx_retry_excd", "req_tx_retry_excd_err", "req_transport_retries_exceeded",
          "req_rnr_retries_exceeded"},
         "transport retries exhausted — the queue pair went to error, NCCL will abort"},
        {rule::kFabricQpError,
         {"req_cqe_error", "resp_cqe_error", "req_remote_access_errors", "resp_remote_access_errors",
          "req_remote_invalid_request", "resp_local_length_error"},
         "completions with error — a queue pair failed"},
    };
    std::vector<PortRows> local;
    for (const PortRows& rows : port_rows(in, local)) {
        const std::string& key = rows.key;
        const DeltaRow* hw = rows.hw;
        if (!hw) continue;  // no hw counter moved or compared: nothing below fires
        for (const auto& c : checks) {
            // Summed first, evidence built only when it fires (most ports, most samples: no allocation).
            double n = 0;
            for (const CounterName name : c.counters)
                if (auto d = delta_of(hw, name)) n += static_cast<double>(d->delta);
            if (!(n > 0)) continue;
            Evidence ev{{"interval_seconds", r.interval_seconds}};
            for (const CounterName name : c.counters)
                if (auto d = delta_of(hw, name)) ev[std::string(name.name())] = static_cast<double>(d->delta);
            ev["events"] = n;
            out.push_back(make_finding(c.rule, Severity::kCritical, key, SubjectKind::kPort,
                                       key + ": " + fmt_num(n) + " " + c.what, std::move(ev), 1 + n,
                                       Hint::kNetwork));
        }
        if (auto rnr = sum_deltas(hw, {"rnr_nak_retry_err"}); rnr && *rnr >= in.t.rnr_nak_min_events) {
            Evidence ev{{"rnr_nak_retry_err", *rnr}, {"threshold", in.t.rnr_nak_min_events}};
            out.push_back(make_finding(rule::kFabricRnrNak, Severity::kWarning, key, SubjectKind::kPort,
                                       key + ": " + fmt_num(*rnr) +
                                           " RNR NAKs (receiver not ready; threshold " +
                                           fmt_num(in.t.rnr_nak_min_events) +
                                           ") — a peer posts receives too slowly, retries are running out",
                                       std::move(ev), *rnr / in.t.rnr_nak_min_events, Hint::kNetwork));
        }
        if (auto oob = sum_deltas(hw, {"out_of_buffer"})) {
            const double rate = per_s(*oob, r);
            if (rate >= in.t.host_rx_discards_per_s && rate > 0) {
                Evidence ev{{"out_of_buffer_per_s", rate}, {"threshold_per_s", in.t.host_rx_discards_per_s}};
                out.push_back(make_finding(
                    rule::kHostRxBackpressure, Severity::kWarning, key, SubjectKind::kPort,
                    key + ": " + fmt_num(rate) +
                        " packets/s dropped for lack of receive buffers (threshold " +
                        fmt_num(in.t.host_rx_discards_per_s) + "/s) — this host consumes too slowly",
                    std::move(ev), rate / std::max(in.t.host_rx_discards_per_s, 1e-9), Hint::kNetwork));
            }
        }
    }
}

void link_flap_rule(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    std::vector<PortRows> local;
    const std::vector<PortRows>& ports = port_rows(in, local);
    for (std::size_t i = 0; i < ports.size(); ++i) {
        const RdmaPort& port = in.cur.rdma[i];
        const std::string& key = ports[i].key;
        const auto downed = sum_deltas(ports[i].counters, {"link_downed"});
        const auto recovered = sum_deltas(ports[i].counters, {"link_error_recovery"});
        std::optional<double> phy;
        if (!port.netdev.empty()) phy = sum_deltas(ports[i].netdev, {"link_down_events_phy"});
        const double n = downed.value_or(0) + recovered.value_or(0) + phy.value_or(0);
        if (n <= 0) continue;
        Evidence ev{{"state", port.state}};
        if (downed) ev["link_downed"] = *downed;
        if (recovered) ev["link_error_recovery"] = *recovered;
        if (phy) ev["link_down_events_phy"] = *phy;
        out.push_back(make_finding(
            rule::kFabricLinkFlap, Severity::kCritical, key, SubjectKind::kPort,
            key + ": link went down/retrained " + fmt_num(n) + " time(s) during the step (link_downed +" +
                fmt_num(downed.value_or(0)) + ", link_error_recovery +" + fmt_num(recovered.value_or(0)) +
                ") — check cable/transceiver; collectives over it stall or abort",
            std::move(ev), 1 + n, Hint::kNetwork));
    }
}

void cc_misconfig_rule(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    std::vector<PortRows> local;
    for (const PortRows& rows : port_rows(in, local)) {
        const std::string& key = rows.key;
        const auto ignored = sum_deltas(rows.hw, {"rp_cnp_ignored"});
        if (!ignored || *ignored <= 0) continue;
        out.push_back(make_finding(rule::kFabricCcMisconfigured, Severity::kWarning, key, SubjectKind::kPort,
                                   key + ": " + fmt_num(*ignored) +
                                       " CNPs ignored — RoCE congestion control (DCQCN/ECN) is off for this "
                                       "priority, congestion will turn into PFC pauses",
                                   Evidence{{"rp_cnp_ignored", *ignored}}, 1));
    }
}

namespace {

// interface_errors_rule's finding, out of line: the loop over every interface of every sample then keeps
// its sums in registers (with the evidence and texts below in its frame, they lived on the stack).
[[gnu::noinline]] void report_interface_errors(const RuleInput& in, Findings& out, const NetInterface& iface,
                                               std::optional<double> errors, std::optional<double> drops,
                                               std::optional<double> packets, double ppm) {
    const bool node_has_rdma = !in.cur.rdma.empty();
    Evidence ev{{"errors", errors.value_or(0)},
                {"drops", drops.value_or(0)},
                {"per_mpkt", ppm},
                {"threshold_per_mpkt", in.t.iface_errors_per_mpkt}};
    if (packets) ev["packets"] = *packets;
    const std::string numbers = fmt_num(errors.value_or(0)) + " errors + " + fmt_num(drops.value_or(0)) +
                                " drops (" + fmt_num(ppm) + " per million packets, threshold " +
                                fmt_num(in.t.iface_errors_per_mpkt) + ")";
    if (is_rdma_netdev(in.cur, iface.name)) {
        out.push_back(make_finding(
            rule::kFabricInterfaceErrors, Severity::kWarning, iface.name, SubjectKind::kInterface,
            iface.name + " (RoCE netdev): " + numbers + " on the RDMA path", std::move(ev),
            ppm / std::max(in.t.iface_errors_per_mpkt, 1e-9), Hint::kNetwork));
    } else if (!node_has_rdma) {
        out.push_back(make_finding(
            rule::kNetworkInterfaceErrors, Label::kSlow, Severity::kWarning, iface.name,
            SubjectKind::kInterface,
            iface.name + ": " + numbers + " — no RDMA port on this node, so this is the data path",
            std::move(ev), ppm / std::max(in.t.iface_errors_per_mpkt, 1e-9), Hint::kNetwork));
    } else {
        ev["rdma_path"] = std::string("no");
        out.push_back(
            make_finding(rule::kNetworkInterfaceErrors, Severity::kInfo, iface.name, SubjectKind::kInterface,
                         iface.name + ": " + numbers +
                             " — TCP/Ethernet only, not the RDMA path; not counted against the step",
                         std::move(ev), 1));
    }
}

}  // namespace

void interface_errors_rule(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    for (std::size_t i = 0; i < in.cur.interfaces.size(); ++i) {
        const NetInterface& iface = in.cur.interfaces[i];
        if (std::string_view(iface.name) == "lo") continue;
        const DeltaRow* row = interface_row(in, i);
        const auto errors = sum_deltas(row, {"rx_errors", "tx_errors"});
        const auto drops = sum_deltas(row, {"rx_dropped", "tx_dropped"});
        const auto packets = sum_deltas(row, {"rx_packets", "tx_packets"});
        const double n = errors.value_or(0) + drops.value_or(0);
        if (n <= 0 || n < in.t.iface_min_events) continue;
        const double ppm = packets && *packets > 0 ? n / *packets * 1e6 : 1e6;
        if (ppm < in.t.iface_errors_per_mpkt) continue;
        report_interface_errors(in, out, iface, errors, drops, packets, ppm);
    }
}

void PortStateRule::evaluate(const RuleInput& in, Findings& out) {
    std::vector<PortRows> local;
    const std::vector<PortRows>& ports = port_rows(in, local);
    for (std::size_t i = 0; i < ports.size(); ++i) {
        const RdmaPort& port = in.cur.rdma[i];
        const std::string& key = ports[i].key;
        PortHistory& h = ports_[key];
        if (port.state.empty()) continue;  // unknown is not down
        const bool active = port.state == "ACTIVE";
        if (active) {
            h.was_active = true;
            if (port.rate_gbps) {
                if (*port.rate_gbps < h.best_rate) {
                    out.push_back(make_finding(
                        rule::kFabricPortDegraded, Severity::kWarning, key, SubjectKind::kPort,
                        key + ": link rate fell from " + fmt_num(h.best_rate) + " to " +
                            fmt_num(*port.rate_gbps) +
                            " Gb/s during the step — link retrained at a lower width/speed",
                        Evidence{{"rate_gbps", *port.rate_gbps}, {"best_rate_gbps", h.best_rate}},
                        h.best_rate / std::max(*port.rate_gbps, 1.0), Hint::kNetwork));
                }
                h.best_rate = std::max(h.best_rate, *port.rate_gbps);
            }
            continue;
        }
        // A port that is down stays down: these fire every sample of the step (an uncabled port on many
        // nodes), so they are written into the kept slots; nullptr when nobody reads their text.
        const auto add_port = [&](const RuleDescriptor& rule, Severity severity, double score,
                                  Hint hint) -> Finding* {
            Finding& f = out.add(rule, severity, SubjectKind::kPort, score, hint);
            f.reason.subject.assign(key);
            if (!out.details_wanted(f)) return nullptr;
            f.reason.evidence["state"] = port.state;
            f.reason.evidence["phys_state"] = port.phys_state;
            return &f;
        };
        const std::string_view phys = port.phys_state.empty() ? std::string_view("?") : port.phys_state;
        const bool polling = port.phys_state == "Polling" || port.phys_state == "LinkErrorRecovery";
        if (h.was_active || polling) {
            Finding* f = add_port(rule::kFabricPortDown, Severity::kCritical, 2, Hint::kNetwork);
            if (!f) continue;
            append_parts(
                f->reason.message, key, ": port is ", port.state, " (", phys, ")",
                h.was_active ? " after being ACTIVE in this step" : " — cable in but the link does not train",
                "; traffic over it has stopped");
        } else if (auto busy = busy_siblings(in, port); !busy.empty()) {
            // Down before the step, but its siblings carry the job's traffic: a compute rail is missing
            // and every collective on this node runs on fewer rails (SLOW, whenever it went down).
            Finding* f = add_port(rule::kFabricRailDown, Severity::kWarning, 1.5, Hint::kNetwork);
            if (!f) continue;
            std::string names;
            for (const auto* p : busy) names += (names.empty() ? "" : ", ") + p->key();
            append_parts(f->reason.message, key, ": port ", port.state, " (", phys,
                         ") since the step started while ", std::to_string(busy.size()), " sibling ",
                         port.link_layer, " port(s) carry traffic (", names,
                         ") — a rail is missing, collectives on this node run on the remaining ones");
            f->reason.evidence["busy_sibling_ports"] = std::move(names);
            f->reason.evidence["ports_same_link_layer"] = static_cast<double>(
                std::count_if(in.cur.rdma.begin(), in.cur.rdma.end(),
                              [&](const RdmaPort& p) { return p.link_layer == port.link_layer; }));
        } else if (!in.rates && std::any_of(in.cur.rdma.begin(), in.cur.rdma.end(), [&](const RdmaPort& p) {
                       return &p != &port && p.state == "ACTIVE" && p.link_layer == port.link_layer;
                   })) {
            continue;  // rail or unused port: the siblings' traffic tells, from the second sample on
        } else {
            if (Finding* f = add_port(rule::kFabricPortInactive, Severity::kInfo, 1, Hint::kNone))
                append_parts(f->reason.message, key, ": port ", port.state, " (", port.phys_state,
                             ") since the step started — not cabled or not used");
        }
    }
}

}  // namespace stallscope
