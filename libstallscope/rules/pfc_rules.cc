#include "libstallscope/rules/pfc_rules.h"

#include <algorithm>
#include <cctype>

#include "libstallscope/rules/fabric_rules.h"

namespace stallscope {
namespace {

// "rx_prio3_pause_duration" with direction "rx" -> priority "prio3", kind "pause_duration".
bool split_pause_name(const std::string& name, const std::string& dir, std::string& prio, std::string& kind) {
    if (name.rfind(dir + "_", 0) != 0) return false;
    std::string rest = name.substr(dir.size() + 1);
    if (rest.rfind("prio", 0) == 0) {
        size_t i = 4;
        while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
        if (i == 4 || i >= rest.size() || rest[i] != '_') return false;
        prio = rest.substr(0, i);
        kind = rest.substr(i + 1);
        return true;
    }
    if (rest.rfind("global_", 0) == 0) {
        prio = "global";
        kind = rest.substr(7);
        return true;
    }
    if (rest == "pause" || rest == "pause_ctrl_phy") {
        prio = "link";
        kind = "pause";
        return true;
    }
    if (rest == "pause_duration") {
        prio = "link";
        kind = "pause_duration";
        return true;
    }
    return false;
}

}  // namespace

PauseDirection pause_direction(const Rates& rates, const std::string& iface, const char* direction) {
    PauseDirection d;
    auto row = rates.interfaces.find(iface);
    if (row == rates.interfaces.end() || rates.interval_seconds <= 0) return d;
    const double dt = rates.interval_seconds;
    double prio_frames = 0, other_frames = 0;
    bool any_frames = false;
    double best_occ = -1;
    for (const auto& [name, delta] : row->second) {
        std::string prio, kind;
        if (delta.reset || !split_pause_name(name, direction, prio, kind)) continue;
        const double v = static_cast<double>(delta.delta);
        if (kind == "pause_duration") {
            const double occ = std::min(100.0, v / (dt * 1e6) * 100.0);
            if (occ > best_occ) {
                best_occ = occ;
                d.worst_priority = prio;
            }
        } else if (kind == "pause") {
            any_frames = true;
            if (prio.rfind("prio", 0) == 0)
                prio_frames += v;
            else
                other_frames = std::max(other_frames, v);
        }
    }
    if (best_occ >= 0) d.occupancy_pct = best_occ;
    if (any_frames) d.frames_per_s = std::max(prio_frames, other_frames) / dt;
    return d;
}

void PfcRule::evaluate(const RuleInput& in, Findings& out) {
    if (!in.rates) return;
    const Rates& r = *in.rates;
    for (const auto& iface : in.cur.interfaces) {
        if (iface.pause.empty()) continue;
        const std::string& name = iface.name;
        Streak& streak = streaks_[name];
        const PauseDirection rx = pause_direction(r, name, "rx");
        const PauseDirection tx = pause_direction(r, name, "tx");
        const bool rdma = is_rdma_netdev(in.cur, name);
        auto over_frames = [&](const PauseDirection& p, int& run) {
            const bool over =
                p.frames_per_s && *p.frames_per_s >= in.t.pfc_pause_frames_per_s && *p.frames_per_s > 0;
            run = over ? run + 1 : 0;
            return !p.occupancy_pct && run >= static_cast<int>(in.t.pfc_sustained_intervals);
        };
        const bool rx_frames = over_frames(rx, streak.rx);
        const bool tx_frames = over_frames(tx, streak.tx);

        auto direction_evidence = [&](const PauseDirection& p, const char* dir, double occ_threshold) {
            Evidence ev{{"direction", std::string(dir)}, {"interval_seconds", r.interval_seconds}};
            if (p.occupancy_pct) ev["pause_occupancy_pct"] = *p.occupancy_pct;
            if (p.frames_per_s) ev["pause_frames_per_s"] = *p.frames_per_s;
            if (!p.worst_priority.empty()) ev["priority"] = p.worst_priority;
            ev["occupancy_threshold_pct"] = occ_threshold;
            ev["frames_threshold_per_s"] = in.t.pfc_pause_frames_per_s;
            ev["rdma_netdev"] = std::string(rdma ? "yes" : "no");
            return ev;
        };
        auto describe = [&](const PauseDirection& p, double occ_threshold, int run) {
            if (p.occupancy_pct)
                return fmt_num(*p.occupancy_pct) + " % of the time" +
                       (p.worst_priority.empty() || p.worst_priority == "link" ? ""
                                                                               : " on " + p.worst_priority) +
                       " (threshold " + fmt_num(occ_threshold) + " %)";
            return fmt_num(p.frames_per_s.value_or(0)) + " pause frames/s for " + std::to_string(run) +
                   "+ intervals (threshold " + fmt_num(in.t.pfc_pause_frames_per_s) + "/s)";
        };

        // Fabric -> us.
        const bool rx_occ =
            rx.occupancy_pct && *rx.occupancy_pct >= in.t.pfc_rx_pause_occupancy_pct && *rx.occupancy_pct > 0;
        if (rx_occ || rx_frames) {
            const double score = rx.occupancy_pct
                                     ? *rx.occupancy_pct / std::max(in.t.pfc_rx_pause_occupancy_pct, 1e-9)
                                     : *rx.frames_per_s / std::max(in.t.pfc_pause_frames_per_s, 1e-9);
            out.push_back(make_finding(
                rule::kPfcFabricBackpressure, Severity::kWarning, name, SubjectKind::kInterface,
                name + ": peer paused this port " + describe(rx, in.t.pfc_rx_pause_occupancy_pct, streak.rx) +
                    " — the switch cannot take our traffic (fabric congestion)",
                direction_evidence(rx, "rx", in.t.pfc_rx_pause_occupancy_pct), score, Hint::kNetwork));
        }

        // Pause storm: the NIC sent pauses so long that its watchdog fired (error = pause TX disabled).
        const auto storm_err = sum_deltas(r.interfaces, name, {"tx_pause_storm_error_events"});
        const auto storm_warn = sum_deltas(r.interfaces, name, {"tx_pause_storm_warning_events"});
        if (storm_err.value_or(0) > 0 || storm_warn.value_or(0) > 0) {
            Evidence ev = direction_evidence(tx, "tx", in.t.pfc_tx_pause_occupancy_pct);
            ev["tx_pause_storm_error_events"] = storm_err.value_or(0);
            ev["tx_pause_storm_warning_events"] = storm_warn.value_or(0);
            const bool error = storm_err.value_or(0) > 0;
            out.push_back(make_finding(
                rule::kPfcPauseStorm, error ? Severity::kCritical : Severity::kWarning, name,
                SubjectKind::kInterface,
                name + ": PFC pause storm — " + fmt_num(storm_warn.value_or(0)) + " storm warning(s), " +
                    fmt_num(storm_err.value_or(0)) + " storm error(s)" +
                    (tx.occupancy_pct ? ", " + fmt_num(*tx.occupancy_pct) + " % of the time sending pauses"
                                      : "") +
                    (error ? "; the NIC stopped sending pauses, drops follow" : "") +
                    " — this host cannot drain its receive buffers and is backpressuring the fabric",
                std::move(ev), 2 + storm_err.value_or(0), Hint::kNetwork));
            continue;  // the storm supersedes the plain tx-side reason
        }

        // Us -> fabric: this host cannot absorb what arrives.
        const auto discards =
            sum_deltas(r.interfaces, name, {"rx_discards_phy", "rx_out_of_buffer", "dev_out_of_buffer"});
        const double discards_s = discards ? *discards / r.interval_seconds : 0;
        const bool tx_occ =
            tx.occupancy_pct && *tx.occupancy_pct >= in.t.pfc_tx_pause_occupancy_pct && *tx.occupancy_pct > 0;
        const bool drops = discards_s > 0 && discards_s >= in.t.host_rx_discards_per_s;
        if (tx_occ || tx_frames || drops) {
            Evidence ev = direction_evidence(tx, "tx", in.t.pfc_tx_pause_occupancy_pct);
            if (discards) ev["rx_discards_per_s"] = discards_s;
            ev["discards_threshold_per_s"] = in.t.host_rx_discards_per_s;
            std::string what =
                (tx_occ || tx_frames)
                    ? "this port paused its peer " + describe(tx, in.t.pfc_tx_pause_occupancy_pct, streak.tx)
                    : "";
            if (drops)
                what += (what.empty() ? "" : "; ") + fmt_num(discards_s) +
                        " packets/s discarded for lack of buffers" + " (threshold " +
                        fmt_num(in.t.host_rx_discards_per_s) + "/s)";
            double score = 1;
            if (tx.occupancy_pct)
                score = std::max(score, *tx.occupancy_pct / std::max(in.t.pfc_tx_pause_occupancy_pct, 1e-9));
            if (drops) score = std::max(score, discards_s / std::max(in.t.host_rx_discards_per_s, 1e-9));
            out.push_back(
                make_finding(rule::kHostRxBackpressure, Severity::kWarning, name, SubjectKind::kInterface,
                             name + ": " + what + " — the adapter/host cannot absorb traffic (PCIe or " +
                                 "receiver bottleneck on this host, not the fabric)",
                             std::move(ev), score, Hint::kNetwork));
        }
    }
}

}  // namespace stallscope
