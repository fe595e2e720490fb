#include "libstallscope/rules/nccl_rules.h"

#include <algorithm>
#include <set>

#include "libstallscope/util/median.h"

namespace stallscope {
namespace {

std::string where(const NcclPeer& p) {
    std::string s;
    if (p.pid >= 0) s = "process " + std::to_string(p.pid);
    if (!p.host.empty()) s += (s.empty() ? "" : " on ") + p.host;
    if (!p.gpus.empty()) s += " (GPU " + p.gpus + ")";
    return s.empty() ? "unknown process" : s;
}

std::string rank_list(const std::vector<int>& ranks) {
    std::string s;
    for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
    if (ranks.size() > 16) s += ",...";
    return s;
}

std::string comm_subject(const std::string& hash) {
    return "comm " + hash;
}

// " (gpu-node-06)" when the peer's host name is known, else "".
std::string host_name(const RuleInput& in, const NcclPeer& p, const std::string& comm = "") {
    if (!in.peer_names) return "";
    const std::string name = in.peer_names->host_of(p, comm);
    return name.empty() || name == p.host ? "" : " (" + name + ")";
}

}  // namespace

void nccl_ras_failure_rule(const RuleInput& in, Findings& out) {
    const NcclState& n = in.cur.nccl;
    std::set<std::string> dead_seen;
    auto dead = [&](const NcclPeer& p, const std::string& how, Evidence ev, const std::string& comm = "") {
        const std::string subject = where(p);
        if (!dead_seen.insert(subject).second) return;
        const std::string name = host_name(in, p, comm);
        if (!name.empty()) ev["host_name"] = name.substr(2, name.size() - 3);
        out.push_back(make_finding(
            rule::kNcclRankDead, Severity::kCritical, subject, SubjectKind::kHost,
            "NCCL " + how + ": " + subject + name + " is dead; the job's collectives cannot complete",
            std::move(ev), 3));
    };
    for (const auto& e : n.ras_events)
        if (e.event == "PEER_DEAD")
            dead(e.peer, "RAS MONITOR reported PEER_DEAD", Evidence{{"event_time", e.timestamp}});
    for (const auto& r : n.ras) {
        if (r.outcome != "ok" && r.outcome != "truncated") continue;  // no report: a telemetry warning
        for (const auto& p : r.dead_processes)
            dead(p, "RAS declared a process", Evidence{{"nccl_version", r.nccl_version}});
        for (const auto& c : r.communicators) {
            for (const auto& m :
                 c.missing)  // an unanswered rank is NcclMissingRankRule's: it waits for 2 polls
                if (m.considered_dead)
                    dead(m.peer,
                         "RAS declared rank " + std::to_string(m.peer.rank) + " of " + comm_subject(c.hash),
                         Evidence{{"rank", static_cast<double>(m.peer.rank)}}, c.hash);
            std::vector<int> failed;
            std::string what;
            bool aborted = false;
            for (const auto& e : c.errors) {
                failed.push_back(e.peer.rank);
                aborted = aborted || e.abort;
                if (what.empty() && e.error != "ABORT")
                    what = e.error + " on " + where(e.peer) + host_name(in, e.peer, c.hash);
            }
            if (!failed.empty())
                out.push_back(make_finding(
                    rule::kNcclAsyncError, Severity::kCritical, comm_subject(c.hash), SubjectKind::kOther,
                    "NCCL " + comm_subject(c.hash) + ": rank(s) " + rank_list(failed) + " reported " +
                        (what.empty() ? std::string("an error") : what) +
                        (aborted ? "; communicator aborting" : ""),
                    Evidence{{"ranks", rank_list(failed)}, {"status", c.status}}, 3));
        }
    }
}

void NcclPeerNames::learn_peer(const NcclPeer& p, const std::string& comm) {
    if (p.host.empty() || ip_host_.count(p.host)) return;
    std::string name;
    if (auto it = pid_host_.find(p.pid); p.pid >= 0 && it != pid_host_.end()) name = it->second;
    if (auto it = rank_host_.find({comm, p.rank}); name.empty() && p.rank >= 0 && it != rank_host_.end())
        name = it->second;
    if (!name.empty()) ip_host_[p.host] = name;
}

void NcclPeerNames::learn(const Snapshot& s) {
    const NcclState& n = s.nccl;
    for (const auto& e : n.log_events)
        if (e.pid >= 0 && !e.host.empty()) pid_host_[e.pid] = e.host;
    for (const auto& c : n.inspector.collectives)
        if (c.rank >= 0 && !c.host.empty()) rank_host_[{c.comm, c.rank}] = c.host;
    for (const auto& st : n.inspector.stragglers)
        if (st.rank >= 0 && !st.host.empty()) rank_host_[{st.comm, st.rank}] = st.host;
    for (const auto& e : n.ras_events) learn_peer(e.peer, "");
    for (const auto& r : n.ras) {
        for (const auto& p : r.dead_processes) learn_peer(p, "");
        for (const auto& c : r.communicators) {
            for (const auto& m : c.missing) learn_peer(m.peer, c.hash);
            for (const auto& e : c.errors) learn_peer(e.peer, c.hash);
        }
    }
}

std::string NcclPeerNames::host_of(const NcclPeer& p, const std::string& comm) const {
    if (auto it = ip_host_.find(p.host); it != ip_host_.end()) return it->second;
    if (auto it = pid_host_.find(p.pid); p.pid >= 0 && it != pid_host_.end()) return it->second;
    if (auto it = rank_host_.find({comm, p.rank}); p.rank >= 0 && it != rank_host_.end()) return it->second;
    return "";
}

void NcclMissingRankRule::evaluate(const RuleInput& in, Findings& out) {
    for (const auto& r : in.cur.nccl.ras) {
        if (r.outcome != "ok" && r.outcome != "truncated") continue;  // a failed poll says nothing
        std::map<std::string, Missing> next;
        for (const auto& c : r.communicators) {
            std::set<int> now;
            std::map<int, std::string> names;  // rank -> " (gpu-node-06)" when known
            for (const auto& m : c.missing)
                if (!m.considered_dead) {  // dead ranks are nccl_rank_dead's
                    now.insert(m.peer.rank);
                    names[m.peer.rank] = host_name(in, m.peer, c.hash);
                }
            if (now.empty()) continue;
            Missing& m = next[c.hash];
            const auto prev = missing_.find(c.hash);
            for (int rank : now) {
                const bool before = prev != missing_.end() && prev->second.polls.count(rank);
                m.polls[rank] = before ? prev->second.polls.at(rank) + 1 : 1;
                m.since[rank] = before ? prev->second.since.at(rank) : r.time;
            }
            std::vector<int> persistent;
            double since = 0;
            for (const auto& [rank, polls] : m.polls)
                if (polls >= 2) {
                    persistent.push_back(rank);
                    since = since == 0 ? m.since[rank] : std::min(since, m.since[rank]);
                }
            if (persistent.empty()) continue;  // one poll: a rank busy in a long kernel, not yet a finding
            std::string hosts;
            for (int rank : persistent)
                if (!names[rank].empty())
                    hosts += (hosts.empty() ? "" : ", ") + ("rank " + std::to_string(rank) + " on " +
                                                            names[rank].substr(2, names[rank].size() - 3));
            Finding f = make_finding(
                rule::kNcclRankMissing, Severity::kWarning, comm_subject(c.hash), SubjectKind::kOther,
                "NCCL " + comm_subject(c.hash) + ": rank(s) " + rank_list(persistent) +
                    (hosts.empty() ? "" : " (" + hosts + ")") +
                    " did not answer the RAS status collection in >= 2 consecutive polls (hung or "
                    "unreachable process)",
                Evidence{{"missing_ranks", rank_list(persistent)},
                         {"size", static_cast<double>(c.size)},
                         {"ras_timeouts", static_cast<double>(r.timeouts)},
                         {"polls_threshold", 2.0}},
                2);
            if (!hosts.empty()) f.reason.evidence["missing_hosts"] = hosts;
            f.since = since;
            out.push_back(std::move(f));
        }
        missing_ = std::move(next);  // a rank that answered this poll starts over
    }
}

void nccl_log_rule(const RuleInput& in, Findings& out) {
    struct Group {
        const RuleDescriptor* rule = nullptr;
        int count = 0;
        const NcclLogEvent* first = nullptr;
    };
    std::map<std::pair<std::string, std::string>, Group> groups;  // (code, subject)
    for (const auto& e : in.cur.nccl.log_events) {
        const RuleDescriptor* rule = nullptr;
        if (e.kind == "ib_wc_error") rule = &rule::kNcclIbCompletionError;
        if (e.kind == "ib_async" && e.fields.count("fatal") && e.fields.at("fatal") == "true")
            rule = &rule::kNcclIbAsyncFatal;
        if (e.kind == "pt_watchdog_timeout") rule = &rule::kNcclWatchdogTimeout;
        if (e.kind == "pt_heartbeat") rule = &rule::kNcclWatchdogStuck;
        if (e.kind == "nccl_error") rule = &rule::kNcclError;
        if (!rule) continue;
        std::string subject = e.rank >= 0      ? "rank " + std::to_string(e.rank)
                              : e.host.empty() ? "host"
                                               : e.host;
        if (e.fields.count("hca")) subject += " " + e.fields.at("hca");
        Group& g = groups[{std::string(rule->code), subject}];
        g.rule = rule;
        if (!g.first) g.first = &e;
        ++g.count;
    }
    for (const auto& [key, g] : groups) {
        const NcclLogEvent& e = *g.first;
        Evidence ev{{"lines", static_cast<double>(g.count)}, {"file", e.file}};
        for (const auto& [k, v] : e.fields) ev[k] = v;
        std::string what;
        const auto field = [&](const char* k) {
            return e.fields.count(k) ? e.fields.at(k) : std::string("?");
        };
        if (g.rule == &rule::kNcclIbCompletionError)
            what = "IB/RoCE completion error status=" + field("status") + " from peer " + field("peer") +
                   (field("status") == "12" ? " (transport retry exceeded: link, peer or route down)" : "");
        else if (g.rule == &rule::kNcclIbAsyncFatal)
            what = "fatal IB async event '" + field("event") + "'";
        else if (g.rule == &rule::kNcclWatchdogTimeout)
            what = "PyTorch watchdog timeout on " + field("op") + " SeqNum " + field("seq") + " after " +
                   field("ran_ms") + " ms (timeout " + field("timeout_ms") + " ms)";
        else if (g.rule == &rule::kNcclWatchdogStuck)
            what = "the ProcessGroupNCCL watchdog itself is stuck (NCCL/CUDA call hanging)";
        else
            what = "NCCL error reached the framework: " + field("error");
        out.push_back(make_finding(*g.rule, Severity::kCritical, key.second, SubjectKind::kHost,
                                   key.second + ": " + what + " (" + std::to_string(g.count) + " line(s))",
                                   std::move(ev), 3,
                                   key.first.rfind("nccl_ib", 0) == 0 ? Hint::kNetwork : Hint::kNone));
    }
}

void nccl_test_rule(const RuleInput& in, Findings& out) {
    const auto& t = in.cur.nccl.nccl_test;
    if (!t || t->outcome == "not_found" || t->outcome == "garbage") return;  // nothing was measured
    Evidence ev{{"outcome", t->outcome}, {"exit_code", static_cast<double>(t->exit_code)}};
    if (t->avg_busbw_gbs) ev["avg_busbw_gbs"] = *t->avg_busbw_gbs;
    if (t->peak_busbw_gbs) ev["peak_busbw_gbs"] = *t->peak_busbw_gbs;
    if (t->wrong) ev["wrong"] = static_cast<double>(*t->wrong);
    const std::string bw =
        t->peak_busbw_gbs ? "peak busbw " + fmt_num(*t->peak_busbw_gbs) + " GB/s" : "no busbw";
    if (t->outcome == "ok") {
        out.push_back(make_finding(rule::kNcclTestResult, Severity::kInfo, "all_reduce_perf",
                                   SubjectKind::kOther, "all_reduce_perf passed: " + bw, std::move(ev)));
        return;
    }
    std::string why = t->outcome;
    if (!t->errors.empty()) why += ": " + t->errors.front();
    out.push_back(make_finding(rule::kNcclTestFailed, Severity::kCritical, "all_reduce_perf",
                               SubjectKind::kOther, "all_reduce_perf failed (" + why + "); " + bw,
                               std::move(ev), 3, Hint::kNetwork));
}

void NcclHangRule::evaluate(const RuleInput& in, Findings& out) {
    for (const auto& r : in.cur.nccl.ras) {
        if (r.outcome != "ok") continue;  // a partial report cannot prove "no progress"
        std::map<std::string, Lag> now;
        for (const auto& c : r.communicators) {
            for (const auto& m : c.mismatches) {
                const std::string key = c.hash + "/" + m.function;
                Lag lag{m.laggards, m.unlisted_laggards, m.max_count, in.cur.time, 1};
                auto prev = lags_.find(key);
                // Same ranks behind, at the same counts: nobody among them launched anything since.
                if (prev != lags_.end() && prev->second.laggards == lag.laggards &&
                    prev->second.unlisted == lag.unlisted) {
                    lag.since = prev->second.since;
                    lag.polls = prev->second.polls + 1;
                }
                const double held = in.cur.time - lag.since;
                if (lag.polls >= 2 && held >= in.t.nccl_hang_min_seconds) {
                    std::vector<int> ranks;
                    std::uint64_t behind = m.max_count;
                    for (const auto& [rank, count] : m.laggards)
                        ranks.push_back(rank), behind = std::min(behind, count);
                    std::string who = ranks.empty() ? "" : "rank(s) " + rank_list(ranks);
                    if (m.unlisted_laggards)
                        who += (who.empty() ? "" : " and ") + std::to_string(m.unlisted_laggards) +
                               " unlisted rank(s)";
                    Finding f = make_finding(
                        rule::kNcclCollectiveHang, Severity::kCritical, comm_subject(c.hash),
                        SubjectKind::kOther,
                        "NCCL " + comm_subject(c.hash) + ": " + who + " stuck at " + m.function + " launch " +
                            std::to_string(behind) + " while others reached " + std::to_string(m.max_count) +
                            " for " + fmt_num(held) + " s over " + std::to_string(lag.polls) +
                            " RAS polls: the lagging ranks are the likely culprits (hang/straggler)",
                        Evidence{{"lagging_ranks", rank_list(ranks)},
                                 {"function", m.function},
                                 {"lagging_count", static_cast<double>(behind)},
                                 {"max_count", static_cast<double>(m.max_count)},
                                 {"seconds", held},
                                 {"polls", static_cast<double>(lag.polls)}},
                        held / std::max(1.0, in.t.nccl_hang_min_seconds));
                    f.since = lag.since;
                    out.push_back(std::move(f));
                }
                now[key] = std::move(lag);
            }
        }
        lags_ = std::move(now);  // a mismatch that cleared is forgotten
    }
}

void NcclInspectorRule::evaluate(const RuleInput& in, Findings& out) {
    const auto& insp = in.cur.nccl.inspector;
    for (const auto& g : insp.stragglers) {
        const double share = g.instances > 0 ? static_cast<double>(g.late) / g.instances : 0;
        if (g.instances < in.t.nccl_straggler_min_instances || share < in.t.nccl_straggler_min_share)
            continue;
        const std::string subject =
            "rank " + std::to_string(g.rank) + (g.host.empty() ? "" : " on " + g.host);
        out.push_back(make_finding(
            rule::kNcclStragglerRank, Severity::kWarning, subject, SubjectKind::kHost,
            "NCCL " + comm_subject(g.comm) + " " + g.coll + ": " + subject + " arrived last in " +
                std::to_string(g.late) + " of " + std::to_string(g.instances) + " instances (median skew " +
                fmt_num(g.median_skew_us) + " us): its peers wait for it in every collective",
            Evidence{{"comm", g.comm},
                     {"coll", g.coll},
                     {"late_share", share},
                     {"instances", static_cast<double>(g.instances)},
                     {"median_skew_us", g.median_skew_us}},
            share / std::max(0.01, in.t.nccl_straggler_min_share), Hint::kCompute));
    }
    // Bus bandwidth per (comm, coll, size): median over the ranks' medians with enough records.
    std::map<std::string, std::vector<double>> current;
    for (const auto& c : insp.collectives)
        if (c.records >= in.t.nccl_busbw_min_records && c.median_busbw_gbs > 0)
            current[c.comm + " " + c.coll + " " + std::to_string(c.msg_size_bytes) + " B"].push_back(
                c.median_busbw_gbs);
    for (const auto& [key, values] : current) {
        const double bw = median(values);
        double& best = best_busbw_[key];
        if (best > 0 && bw < best * (1 - in.t.nccl_busbw_drop_pct / 100)) {
            const double drop = 100 * (1 - bw / best);
            out.push_back(
                make_finding(rule::kNcclBusbwDrop, Severity::kWarning, "comm " + key, SubjectKind::kOther,
                             "NCCL comm " + key + ": bus bandwidth " + fmt_num(bw) + " GB/s, " +
                                 fmt_num(drop) + " % below the step's best " + fmt_num(best) + " GB/s",
                             Evidence{{"busbw_gbs", bw},
                                      {"best_busbw_gbs", best},
                                      {"drop_pct", drop},
                                      {"threshold_pct", in.t.nccl_busbw_drop_pct}},
                             drop / std::max(1.0, in.t.nccl_busbw_drop_pct), Hint::kNetwork));
        }
        best = std::max(best, bw);
    }
}

}  // namespace stallscope
