// The numbers of an interface, RDMA port or GPU that move from sample to sample, under their to_json keys
// and in to_json's order: the v2 writer compares these leaf by leaf (snapshot_diff_parts.cc) and the v2
// reader writes their changes straight into the Snapshot it keeps (kept_counter.cc). One table for both,
// so what the writer treats as a moving number is what the reader can place; both derived from the model's
// one description of each struct (model/fields.h).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

// Exactly one member set: a counter (to_json writes it as an unsigned integer, snapshot_from_json reads it
// with Reader::u64), a gauge (any JSON number, read as a double), or a map of counters.
template <typename T>
struct Moving {
    const char* key;
    Counter T::*counter = nullptr;
    Gauge T::*gauge = nullptr;
    CounterMap T::*map = nullptr;
};

// The members T's description (snapshot.h) flags kMoving, in its order (to_json's). Derived, so the
// writer's table cannot fall out of step with what to_json writes: a moving member is always written
// (a counter, a gauge or a counter map of the element itself, never an optional part), which the
// constant evaluation below enforces by failing to compile otherwise.
template <typename T>
constexpr auto moving_table() {
    constexpr std::size_t n = [] {
        std::size_t count = 0;
        fields::for_each_field<T>([&](const auto& f) { count += (f.flags & fields::kMoving) != 0; });
        return count;
    }();
    std::array<Moving<T>, n> table{};
    std::size_t i = 0;
    fields::for_each_field<T>([&](const auto& f) {
        if (!(f.flags & fields::kMoving)) return;
        constexpr auto member = std::remove_cvref_t<decltype(f)>::member;
        using V = fields::member_type<member>;
        Moving<T>& entry = table[i++];
        entry.key = f.key;
        if constexpr (std::is_same_v<V, Counter>)
            entry.counter = member;
        else if constexpr (std::is_same_v<V, Gauge>)
            entry.gauge = member;
        else if constexpr (std::is_same_v<V, CounterMap>)
            entry.map = member;
        else
            throw "a moving field is a Counter, a Gauge or a CounterMap";  // not a constant: no build
    });
    return table;
}

inline constexpr auto kMovingInterface = moving_table<NetInterface>();
inline constexpr auto kMovingRdmaPort = moving_table<RdmaPort>();
inline constexpr auto kMovingGpu = moving_table<Gpu>();
// The host's numbers, for the reader only (the writer compares host_stats as a tree: one small object):
// "/host_stats/<key>" and "/host_stats/psi/<key>" pointers land on these, as the reader reads them.
inline constexpr auto kMovingHost = moving_table<HostStats>();
inline constexpr auto kMovingPsi = moving_table<Psi>();

// The entry of `table` named `key`, or null.
template <typename T, std::size_t N>
constexpr const Moving<T>* find_moving(const std::array<Moving<T>, N>& table, std::string_view key) {
    for (const auto& f : table)
        if (key == f.key) return &f;
    return nullptr;
}

}  // namespace stallscope
