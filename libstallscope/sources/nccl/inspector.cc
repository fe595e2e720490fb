#include "libstallscope/sources/nccl/inspector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/sources/nccl/ras_parse.h"
#include "libstallscope/util/median.h"

namespace stallscope::nccl {
namespace {

// ordered_json: the type json_fields::Reader reads (records are small; order is irrelevant here).
using OrderedJson = nlohmann::ordered_json;

constexpr std::size_t kMaxPending = 8192;  // joined instances waiting for more ranks
constexpr int kMaxPendingAge = 3;          // samples an instance may wait for the rest of its ranks

// Ranks and rank counts are ints; a 64-bit value outside int's range is as unusable as a missing one.
int clamp_to_int(std::optional<std::int64_t> v, int fallback) {
    if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) return fallback;
    return static_cast<int>(*v);
}

std::optional<double> number(const OrderedJson& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_number()) return std::nullopt;  // "nan" is a string
    const double v = it->get<double>();
    return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

}  // namespace

bool is_inspector_file_name(std::string_view name) {
    if (name.size() < 9 || name.substr(name.size() - 4) != ".log") return false;
    const auto at = name.rfind("-pid");
    if (at == std::string_view::npos || at == 0) return false;
    const auto digits = name.substr(at + 4, name.size() - 4 - (at + 4));
    return !digits.empty() &&
           std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<InspectorRecord> parse_inspector_line(std::string_view line, std::string& why) {
    const OrderedJson o = OrderedJson::parse(line, nullptr, /*allow_exceptions=*/false);
    if (o.is_discarded() || !o.is_object()) {
        why = "not a JSON object";
        return std::nullopt;
    }
    const auto h = o.find("header"), m = o.find("metadata");
    if (h == o.end() || m == o.end() || !h->is_object() || !m->is_object()) {
        why = "no header/metadata";
        return std::nullopt;
    }
    // Typed, non-throwing reads only (json_fields::Reader): a key of the wrong type is a problem that
    // declines the record, never an exception out of this parser (nlohmann's value() throws).
    std::vector<std::string> problems;
    const json_fields::Reader header{*h, problems, "header"}, metadata{*m, problems, "metadata"};
    const std::string version = metadata.string("inspector_output_format_version");
    if (version.rfind("v4.", 0) != 0) {
        why = "unsupported inspector_output_format_version '" + version.substr(0, 16) + "'";
        return std::nullopt;
    }
    InspectorRecord r;
    r.comm = normalize_comm_hash(header.string("id"));
    r.rank = clamp_to_int(header.integer("rank"), -1);
    r.n_ranks = clamp_to_int(header.integer("n_ranks"), 0);
    r.host = metadata.string("hostname");
    r.pid = metadata.integer("pid").value_or(-1);
    const char* prefix = "coll";
    auto perf = o.find("coll_perf");
    if (perf == o.end()) {
        perf = o.find("p2p_perf");
        prefix = "p2p";
        r.p2p = true;
    }
    if (perf == o.end() || !perf->is_object()) {
        why = "neither coll_perf nor p2p_perf";
        return std::nullopt;
    }
    const std::string p(prefix);
    const json_fields::Reader fields{*perf, problems, p + "_perf"};
    r.coll = fields.string(p.c_str());
    const auto sn = fields.u64((p + "_sn").c_str());
    const auto size = fields.u64((p + "_msg_size_bytes").c_str());
    const auto exec = number(*perf, (p + "_exec_time_us").c_str());
    if (!problems.empty()) {
        why = problems.front();
        return std::nullopt;
    }
    if (r.coll.empty() || !sn || !size || !exec || r.rank < 0) {
        why = "record without op, sequence number, size, exec time or rank";
        return std::nullopt;
    }
    r.sn = *sn;
    r.msg_size_bytes = *size;
    r.exec_us = *exec;
    r.busbw_gbs = number(*perf, (p + "_busbw_gbs").c_str());
    return r;
}

void InspectorAggregator::add(const InspectorRecord& r) {
    Acc& acc = stats_[StatKey{r.comm, r.coll, r.msg_size_bytes, r.rank}];
    ++acc.records;
    acc.n_ranks = r.n_ranks;
    acc.host = r.host;
    if (r.busbw_gbs) acc.busbw.push_back(*r.busbw_gbs);
    acc.exec.push_back(r.exec_us);
    rank_host_[{r.comm, r.rank}] = r.host;
    if (r.p2p || r.n_ranks < 2) return;  // only collectives synchronise all ranks
    if (pending_.size() >= kMaxPending) pending_.erase(pending_.begin());
    Pending& p = pending_[InstanceKey{r.comm, r.coll, r.sn}];
    p.n_ranks = r.n_ranks;
    p.exec_by_rank[r.rank] = r.exec_us;
    if (static_cast<int>(p.exec_by_rank.size()) >= p.n_ranks) {
        const InstanceKey key{r.comm, r.coll, r.sn};
        close_instance(key, p);
        pending_.erase(key);
    }
}

void InspectorAggregator::close_instance(const InstanceKey& key, const Pending& p) {
    if (p.exec_by_rank.size() < 2) return;
    auto lo = p.exec_by_rank.begin(), hi = p.exec_by_rank.begin();
    for (auto it = p.exec_by_rank.begin(); it != p.exec_by_rank.end(); ++it) {
        if (it->second < lo->second) lo = it;
        if (it->second > hi->second) hi = it;
    }
    const double skew = hi->second - lo->second;
    if (hi->second <= 0 || skew / hi->second < kSignificantSkew) return;
    auto& window = late_[{std::get<0>(key), std::get<1>(key)}];
    window.push_back(Late{lo->first, skew});
    while (window.size() > window_) window.pop_front();
}

NcclInspector InspectorAggregator::take_sample() {
    // Instances still missing ranks after a few samples are judged on the ranks that reported (a
    // node-local dump dir only holds the local ranks; ring drops and size filters leave gaps).
    for (auto it = pending_.begin(); it != pending_.end();) {
        if (++it->second.age > kMaxPendingAge) {
            close_instance(it->first, it->second);
            it = pending_.erase(it);
        } else {
            ++it;
        }
    }
    NcclInspector out;
    for (auto& [key, acc] : stats_) {
        NcclCollectiveStats s;
        std::tie(s.comm, s.coll, s.msg_size_bytes, s.rank) = key;
        s.n_ranks = acc.n_ranks;
        s.host = acc.host;
        s.records = acc.records;
        s.median_busbw_gbs = median(acc.busbw);
        s.median_exec_us = median(acc.exec);
        out.collectives.push_back(std::move(s));
    }
    stats_.clear();
    for (const auto& [key, window] : late_) {
        std::map<int, int> late;
        for (const auto& l : window) ++late[l.rank];
        const auto worst = std::max_element(late.begin(), late.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
        // Only a majority late-arriver is worth a record; the rule applies the configured share.
        if (worst == late.end() || worst->second * 2 <= static_cast<int>(window.size())) continue;
        NcclStraggler g;
        g.comm = key.first;
        g.coll = key.second;
        g.rank = worst->first;
        auto host = rank_host_.find({g.comm, g.rank});
        if (host != rank_host_.end()) g.host = host->second;
        g.instances = static_cast<int>(window.size());
        g.late = worst->second;
        std::vector<double> skews;
        for (const auto& l : window)
            if (l.rank == g.rank) skews.push_back(l.skew_us);
        g.median_skew_us = median(skews);
        out.stragglers.push_back(std::move(g));
    }
    return out;
}

}  // namespace stallscope::nccl
