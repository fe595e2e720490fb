#include "libstallscope/timeline/kept_counter.h"

#include <charconv>

#include "libstallscope/timeline/moving_fields.h"

namespace stallscope {
namespace {

// The next segment of `p` after position `at` (which holds '/'), advancing `at`.
bool next_segment(std::string_view p, std::size_t& at, std::string_view& segment) {
    if (at >= p.size() || p[at] != '/') return false;
    const std::size_t end = std::min(p.find('/', at + 1), p.size());
    segment = p.substr(at + 1, end - at - 1);
    at = end;
    return true;
}

// "/host_stats/<member>" or "/host_stats/psi/<member>", after "/host_stats" (at `at`).
void parse_host(std::string_view p, std::size_t at, KeptCounter& out) {
    std::string_view member, psi_member;
    if (!next_segment(p, at, member)) return;
    if (member == "psi") {
        if (!next_segment(p, at, psi_member) || at != p.size()) return;
        if (const auto* f = find_moving(kMovingPsi, psi_member)) {
            out.psi_counter = f->counter;
            out.psi_gauge = f->gauge;
        }
    } else if (at == p.size()) {
        if (const auto* f = find_moving(kMovingHost, member)) {
            out.host_counter = f->counter;
            out.host_gauge = f->gauge;
        }
    }
    if (out.host_counter || out.host_gauge || out.psi_counter || out.psi_gauge) {
        out.name.clear();
        out.kind = KeptCounter::Kind::host;
    }
}

}  // namespace

void parse_kept_counter(std::string_view p, KeptCounter& out) {
    out.kind = KeptCounter::Kind::none;
    out.interface_counter = nullptr;
    out.interface_map = nullptr;
    out.rdma_counter = nullptr;
    out.rdma_map = nullptr;
    out.gpu_counter = nullptr;
    out.gpu_gauge = nullptr;
    out.host_counter = nullptr;
    out.host_gauge = nullptr;
    out.psi_counter = nullptr;
    out.psi_gauge = nullptr;
    if (p.find('~') != std::string_view::npos) return;  // an escaped name: not one of ours
    std::size_t at = 0;
    std::string_view part, index, member, name;
    if (!next_segment(p, at, part)) return;
    if (part == "host_stats") return parse_host(p, at, out);
    if (!next_segment(p, at, index) || !next_segment(p, at, member)) return;
    const bool has_name = next_segment(p, at, name);
    if (at != p.size()) return;  // deeper than a map entry
    const auto r = std::from_chars(index.data(), index.data() + index.size(), out.element);
    if (index.empty() || r.ec != std::errc() || r.ptr != index.data() + index.size()) return;
    KeptCounter::Kind kind = KeptCounter::Kind::none;
    // A member: a counter (or a GPU gauge) of the moving table; a map entry: a name in one of its maps.
    if (part == "interfaces") {
        if (const auto* f = find_moving(kMovingInterface, member)) {
            if (has_name)
                out.interface_map = f->map;
            else
                out.interface_counter = f->counter;
            if (out.interface_map || out.interface_counter) kind = KeptCounter::Kind::interface;
        }
    } else if (part == "rdma") {
        if (const auto* f = find_moving(kMovingRdmaPort, member)) {
            if (has_name)
                out.rdma_map = f->map;
            else
                out.rdma_counter = f->counter;
            if (out.rdma_map || out.rdma_counter) kind = KeptCounter::Kind::rdma;
        }
    } else if (part == "gpus" && !has_name) {
        if (const auto* f = find_moving(kMovingGpu, member)) {
            out.gpu_counter = f->counter;
            out.gpu_gauge = f->gauge;
            if (out.gpu_counter || out.gpu_gauge) kind = KeptCounter::Kind::gpu;
        }
    }
    if (kind == KeptCounter::Kind::none) return;
    out.name.assign(name);
    out.kind = kind;
}

Counter* kept_counter(Snapshot& s, const KeptCounter& c) {
    auto in_map = [&](CounterMap& m) -> Counter* {
        const auto it = m.find(c.name);
        return it == m.end() ? nullptr : &it->second;
    };
    switch (c.kind) {
        case KeptCounter::Kind::interface:
            if (c.element >= s.interfaces.size()) return nullptr;
            return c.interface_map ? in_map(s.interfaces[c.element].*c.interface_map)
                                   : &(s.interfaces[c.element].*c.interface_counter);
        case KeptCounter::Kind::rdma:
            if (c.element >= s.rdma.size()) return nullptr;
            return c.rdma_map ? in_map(s.rdma[c.element].*c.rdma_map) : &(s.rdma[c.element].*c.rdma_counter);
        case KeptCounter::Kind::gpu:
            if (c.element >= s.gpus.size() || !c.gpu_counter) return nullptr;
            return &(s.gpus[c.element].*c.gpu_counter);
        case KeptCounter::Kind::host:
            if (c.host_counter) return &(s.host_stats.*c.host_counter);
            return c.psi_counter ? &(s.host_stats.psi.*c.psi_counter) : nullptr;
        default:
            return nullptr;
    }
}

Gauge* kept_gauge(Snapshot& s, const KeptCounter& c) {
    if (c.kind == KeptCounter::Kind::host) {
        if (c.host_gauge) return &(s.host_stats.*c.host_gauge);
        return c.psi_gauge ? &(s.host_stats.psi.*c.psi_gauge) : nullptr;
    }
    if (c.kind != KeptCounter::Kind::gpu || !c.gpu_gauge || c.element >= s.gpus.size()) return nullptr;
    return &(s.gpus[c.element].*c.gpu_gauge);
}

void kept_counters(Snapshot& s, std::span<const KeptCounter> list, std::vector<const Counter*>& out) {
    out.clear();
    for (const KeptCounter& c : list)
        if (const Counter* found = kept_counter(s, c)) out.push_back(found);
}

}  // namespace stallscope
