#include "libstallscope/hang/culprit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "libstallscope/model/json_fields.h"

namespace stallscope {
namespace {

// What GPU telemetry calls a spinning GPU: the gpu_busy_wait_hang rule's signature (busy, no work).
constexpr double kBusyUtilPct = 90, kIdleUtilPct = 10, kSpinSmActivePct = 20, kSpinPowerFraction = 0.25;

// Who votes for a culprit rank; array indexes.
enum Source { kFromFlightRecorder, kFromRas, kFromGpu, kFromProc, kSources };
constexpr const char* kSourceNames[kSources] = {"flight_recorder", "ras", "gpu", "proc"};

struct Vote {
    std::set<int> ranks;    // ranks this source names
    bool has_data = false;  // it had something to say about the job at all
};

struct FlightRecorderView {
    Vote vote;
    std::map<int, std::pair<std::int64_t, std::int64_t>> behind;  // rank -> (its last enqueued, group max)
    std::string collective;
    std::string all_inside;  // "every rank enqueued ..., none completed it" when no rank is behind
};

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
}

std::string describe_collective(const FlightRecorderGroup& g, std::int64_t seq,
                                const FlightRecorderEntry* e) {
    std::string s = (g.desc.empty() ? g.name : g.desc) + " #" + std::to_string(seq);
    if (e) {
        if (!e->profiling_name.empty()) s += " " + e->profiling_name;
        if (!e->input_sizes.empty()) s += " " + e->input_sizes;
        if (!e->input_dtypes.empty()) s += " " + e->input_dtypes;
    }
    return s;
}

FlightRecorderView flight_recorder_vote(const HangEvidence& in) {
    FlightRecorderView out;
    struct Member {
        const RankEvidence* rank;
        const FlightRecorderGroup* group;
    };
    std::map<std::string, std::vector<Member>> groups;
    for (const auto& r : in.ranks) {
        if (!r.flight_recorder) continue;
        out.vote.has_data = true;
        for (const auto& g : r.flight_recorder->groups)
            if (g.last_enqueued) groups[g.name].push_back({&r, &g});
    }
    // The group with the fewest ranks behind (the most specific answer); the default group wins ties
    // through the map's order ("0" first).
    std::size_t best_behind = SIZE_MAX;
    for (const auto& [name, members] : groups) {
        if (members.size() < 2) continue;
        std::int64_t top = 0;
        const Member* ahead = nullptr;
        for (const auto& m : members)
            if (!ahead || *m.group->last_enqueued > top) top = *m.group->last_enqueued, ahead = &m;
        std::vector<const Member*> behind;
        for (const auto& m : members)
            if (*m.group->last_enqueued < top) behind.push_back(&m);
        if (behind.empty()) {
            const auto done = ahead->group->last_completed;
            if (out.all_inside.empty() && (!done || *done < top))
                out.all_inside =
                    describe_collective(*ahead->group, top, ahead->rank->flight_recorder->entry(name, top));
            continue;
        }
        if (behind.size() >= best_behind) continue;
        best_behind = behind.size();
        out.vote.ranks.clear();
        out.behind.clear();
        for (const auto* m : behind) {
            out.vote.ranks.insert(m->rank->rank);
            out.behind[m->rank->rank] = {*m->group->last_enqueued, top};
        }
        out.collective =
            describe_collective(*ahead->group, top, ahead->rank->flight_recorder->entry(name, top));
    }
    if (!out.vote.ranks.empty()) out.all_inside.clear();
    return out;
}

Vote ras_vote(const HangEvidence& in, std::string& phrase, std::string& function) {
    Vote v;
    for (const auto& m : in.ras) {
        if (m.laggards.empty()) continue;
        v.has_data = true;
        std::uint64_t lowest = UINT64_MAX;
        for (const auto& [rank, count] : m.laggards) lowest = std::min(lowest, count);
        for (const auto& [rank, count] : m.laggards)
            if (count == lowest) v.ranks.insert(rank);
        phrase = "RAS " + m.function + " " + std::to_string(lowest) + " vs " + std::to_string(m.max_count);
        function = m.function + " #" + std::to_string(m.max_count);
        break;  // the first persistent mismatch: the detector lists the oldest first
    }
    return v;
}

bool spinning(const RankGpuState& g) {
    if (!g.utilization_pct || *g.utilization_pct < kBusyUtilPct) return false;
    if (g.sm_active_pct) return *g.sm_active_pct <= kSpinSmActivePct;
    return g.power_w && g.power_limit_w && *g.power_limit_w > 0 &&
           *g.power_w <= kSpinPowerFraction * *g.power_limit_w;
}

Vote gpu_vote(const HangEvidence& in, double& peer_util) {
    Vote v;
    std::vector<const RankEvidence*> measured, spinners;
    for (const auto& r : in.ranks) {
        if (!r.gpu_state || !r.gpu_state->utilization_pct) continue;
        measured.push_back(&r);
        if (spinning(*r.gpu_state)) spinners.push_back(&r);
        if (r.gpu_state->xid) v.ranks.insert(r.rank);  // an Xid names its rank whatever the others do
    }
    v.has_data = !measured.empty();
    peer_util = 0;
    for (const auto* r : spinners) peer_util += *r->gpu_state->utilization_pct;
    if (!spinners.empty()) peer_util /= static_cast<double>(spinners.size());
    // Outliers only against a spinning majority: with no majority there is no "the others".
    if (spinners.size() < 2 || spinners.size() * 2 <= measured.size()) return v;
    for (const auto* r : measured)
        if (!spinning(*r->gpu_state)) v.ranks.insert(r->rank);
    return v;
}

Vote proc_vote(const HangEvidence& in) {
    Vote v;
    std::map<ThreadActivity, int> counts;
    int known = 0;
    for (const auto& r : in.ranks)
        if (r.main_thread && r.main_thread->activity != ThreadActivity::unknown) {
            ++counts[r.main_thread->activity];
            ++known;
        }
    v.has_data = known > 0;
    ThreadActivity mode = ThreadActivity::unknown;
    int mode_count = 0;
    for (const auto& [activity, n] : counts)
        if (n > mode_count) mode = activity, mode_count = n;
    if (mode_count < 2 || mode_count * 2 <= known) return v;
    for (const auto& r : in.ranks)
        if (r.main_thread && r.main_thread->activity != ThreadActivity::unknown &&
            r.main_thread->activity != mode)
            v.ranks.insert(r.rank);
    return v;
}

std::string main_thread_phrase(const RankMainThread& t) {
    std::string s = std::string("main thread ") + to_string(t.activity) + " (" + t.state;
    if (!t.wchan.empty()) s += ", wchan " + t.wchan;
    s += ", " + fmt(100 * t.cpu_share) + " % CPU";
    if (t.threads_in_d > 0) s += ", " + std::to_string(t.threads_in_d) + " threads in D";
    return s + ")";
}

}  // namespace

const char* to_string(HangFindingKind kind) {
    switch (kind) {
        case HangFindingKind::culprit:
            return "culprit";
        case HangFindingKind::suspect:
            return "suspect";
        case HangFindingKind::all_waiting:
            return "all_waiting";
        case HangFindingKind::no_evidence:
            break;
    }
    return "no_evidence";
}

HangFinding name_culprit(const HangEvidence& in) {
    HangFinding out;
    const FlightRecorderView fr = flight_recorder_vote(in);
    std::string ras_phrase, ras_collective;
    double peer_util = 0;
    Vote votes[kSources] = {fr.vote, ras_vote(in, ras_phrase, ras_collective), gpu_vote(in, peer_util),
                            proc_vote(in)};

    // The rank most sources name; ties go to the most specific source (flight recorder first), then the
    // lowest rank.
    std::map<int, std::vector<int>> named;  // rank -> sources
    for (int s = 0; s < kSources; ++s)
        for (const int rank : votes[s].ranks) named[rank].push_back(s);
    int best = -1;
    for (const auto& [rank, sources] : named) {
        if (best < 0) {
            best = rank;
            continue;
        }
        const auto& b = named[best];
        if (sources.size() > b.size() || (sources.size() == b.size() && sources.front() < b.front()))
            best = rank;
    }

    const bool any_data =
        std::any_of(std::begin(votes), std::end(votes), [](const Vote& v) { return v.has_data; });
    out.collective = !fr.collective.empty()   ? fr.collective
                     : !fr.all_inside.empty() ? fr.all_inside
                                              : ras_collective;
    std::set<int> ranks_seen;
    for (const auto& r : in.ranks) ranks_seen.insert(r.rank);

    if (best < 0) {
        out.kind = any_data ? HangFindingKind::all_waiting : HangFindingKind::no_evidence;
        out.waiting_ranks = static_cast<int>(ranks_seen.size());
        if (!fr.all_inside.empty())
            out.evidence.push_back("FR: every rank enqueued " + fr.all_inside + ", none completed it");
        if (votes[kFromRas].has_data) out.evidence.push_back(ras_phrase);
        if (votes[kFromGpu].has_data && peer_util > 0)
            out.evidence.push_back("GPUs spinning at " + fmt(peer_util) + " %");
        if (out.kind == HangFindingKind::all_waiting) {
            out.line = "HANG: all " + std::to_string(out.waiting_ranks) +
                       " ranks waiting inside the collective" +
                       (out.collective.empty() ? "" : " " + out.collective) + ": look at the fabric";
        } else {
            out.line = "HANG: no rank evidence captured (no flight recorder, RAS, GPU or /proc data)";
        }
        if (!out.evidence.empty()) out.line += ". Evidence: ";
        for (std::size_t i = 0; i < out.evidence.size(); ++i) out.line += (i ? "; " : "") + out.evidence[i];
        return out;
    }

    out.kind = named[best].size() >= 2 ? HangFindingKind::culprit : HangFindingKind::suspect;
    out.rank = best;
    for (const int s : named[best]) out.sources.push_back(kSourceNames[s]);
    const RankEvidence* who = nullptr;
    for (const auto& r : in.ranks)
        if (r.rank == best) who = &r;
    if (who) {
        out.host = who->host;
        out.gpu = who->gpu;
        out.pid = who->pid;
    }
    std::set<int> others(fr.vote.ranks);
    others.insert(votes[kFromRas].ranks.begin(), votes[kFromRas].ranks.end());
    others.erase(best);
    out.other_laggards.assign(others.begin(), others.end());
    out.waiting_ranks = static_cast<int>(ranks_seen.size()) - 1 - static_cast<int>(others.size());
    if (out.waiting_ranks < 0) out.waiting_ranks = 0;

    if (const auto it = fr.behind.find(best); it != fr.behind.end())
        out.evidence.push_back("FR last_enqueued " + std::to_string(it->second.first) + " vs " +
                               std::to_string(it->second.second));
    if (votes[kFromRas].ranks.count(best)) out.evidence.push_back(ras_phrase);
    if (who && who->gpu_state && who->gpu_state->utilization_pct) {
        std::string g = "GPU" + (who->gpu >= 0 ? std::to_string(who->gpu) : std::string("?")) + " " +
                        fmt(*who->gpu_state->utilization_pct) + " %";
        if (peer_util > 0) g += " vs peers " + fmt(peer_util) + " %";
        if (who->gpu_state->xid) g += ", Xid";
        out.evidence.push_back(g);
    }
    if (who && who->main_thread) out.evidence.push_back(main_thread_phrase(*who->main_thread));

    std::string where = out.host.empty() ? "" : out.host;
    if (out.gpu >= 0) where += (where.empty() ? "" : " ") + std::string("GPU") + std::to_string(out.gpu);
    if (out.pid > 0) where += (where.empty() ? "" : " ") + std::string("pid ") + std::to_string(out.pid);
    out.line = std::string("HANG ") + to_string(out.kind) + ": rank " + std::to_string(best) +
               (where.empty() ? "" : " (" + where + ")") +
               (out.collective.empty() ? " differs from its peers" : " did not arrive at " + out.collective);
    if (!out.other_laggards.empty()) {
        out.line += "; also behind: rank";
        for (const int r : out.other_laggards) out.line += " " + std::to_string(r);
    }
    out.line += "; " + std::to_string(out.waiting_ranks) + " ranks wait inside";
    if (!out.evidence.empty()) out.line += ". Evidence: ";
    for (std::size_t i = 0; i < out.evidence.size(); ++i) out.line += (i ? "; " : "") + out.evidence[i];
    return out;
}

Json to_json(const HangFinding& f) {
    using json_fields::put;
    Json j = json_fields::object_of(11);
    put(j, "kind", to_string(f.kind));
    put(j, "rank", f.rank >= 0 ? Json(f.rank) : Json(nullptr));
    put(j, "host", f.host);
    put(j, "gpu", f.gpu >= 0 ? Json(f.gpu) : Json(nullptr));
    put(j, "pid", f.pid > 0 ? Json(f.pid) : Json(nullptr));
    put(j, "collective", f.collective);
    put(j, "sources", f.sources);
    put(j, "evidence", f.evidence);
    put(j, "other_laggards", f.other_laggards);
    put(j, "waiting_ranks", f.waiting_ranks);
    put(j, "line", f.line);
    return j;
}

}  // namespace stallscope
