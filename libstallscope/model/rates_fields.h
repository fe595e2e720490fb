// The counters of the structs with a fixed set of them (NetInterface, Gpu, HostStats, JobCgroup), by the
// name they have in a Rates row, in name order (the order of a row): the members their description
// (snapshot.h) flags kRate, and those of a part flagged kRate under its prefix ("psi_"). Shared by
// compute_rates and RatesTracker so both walk the same counters under the same names. Internal to
// libstallscope/model.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "libstallscope/model/snapshot.h"

namespace stallscope::rates_fields {

template <class T>
struct Field {
    std::string_view name;
    const Counter* (*get)(const T&);  // nullptr when the struct has no such counter in this sample
};

namespace detail {

template <auto Member>
const Counter* direct(const typename fields::MemberOf<Member>::owner& x) {
    return &(x.*Member);
}

// A counter of a part: through the optional when the part may be absent (a GPU's interconnect block).
template <auto Part, auto Member>
const Counter* inside(const typename fields::MemberOf<Part>::owner& x) {
    const auto& part = x.*Part;
    if constexpr (fields::is_optional<std::remove_cvref_t<decltype(part)>>)
        return part ? &((*part).*Member) : nullptr;
    else
        return &(part.*Member);
}

template <class P>
struct Part {
    using type = P;
};
template <class P>
struct Part<std::optional<P>> {
    using type = P;
};
template <class P>
using part_type = typename Part<P>::type;

// Calls add(name prefix, key, getter) for each rated counter of T.
template <class T, class Add>
void each_rated(Add&& add) {
    fields::for_each_field<T>([&](const auto& f) {
        using Outer = std::remove_cvref_t<decltype(f)>;
        using V = fields::member_type<Outer::member>;
        if (!(f.flags & fields::kRate)) return;
        if constexpr (std::is_same_v<V, Counter>) {
            add("", f.key, &direct<Outer::member>);
        } else if constexpr (fields::Described<part_type<V>>) {
            const unsigned mask = f.rate_mask;
            const char* prefix = f.rate_prefix;
            fields::for_each_field<part_type<V>>([&](const auto& inner) {
                using I = std::remove_cvref_t<decltype(inner)>;
                if constexpr (std::is_same_v<fields::member_type<I::member>, Counter>)
                    if (inner.flags & mask) add(prefix, inner.key, &inside<Outer::member, I::member>);
            });
        }
    });
}

template <class T>
consteval std::size_t rated_count() {
    std::size_t n = 0;
    fields::for_each_field<T>([&](const auto& f) {
        using V = fields::member_type<std::remove_cvref_t<decltype(f)>::member>;
        if (!(f.flags & fields::kRate)) return;
        if constexpr (std::is_same_v<V, Counter>) {
            ++n;
        } else if constexpr (fields::Described<part_type<V>>) {
            fields::for_each_field<part_type<V>>([&](const auto& inner) {
                using I = std::remove_cvref_t<decltype(inner)>;
                if constexpr (std::is_same_v<fields::member_type<I::member>, Counter>)
                    if (inner.flags & f.rate_mask) ++n;
            });
        }
    });
    return n;
}

// T's rated counters in name order; the names of a part's counters are kept in `names` (built once).
template <class T>
const auto& by_name() {
    static const auto table = [] {
        static std::array<std::string, rated_count<T>()> names;
        std::array<Field<T>, rated_count<T>()> out{};
        std::size_t i = 0;
        each_rated<T>([&](const char* prefix, const char* key, const Counter* (*get)(const T&)) {
            names[i] = std::string(prefix) + key;
            out[i] = Field<T>{names[i], get};
            ++i;
        });
        std::sort(out.begin(), out.end(),
                  [](const Field<T>& a, const Field<T>& b) { return a.name < b.name; });
        return out;
    }();
    return table;
}

}  // namespace detail

inline const auto& interface_fields() {
    return detail::by_name<NetInterface>();
}
inline const auto& gpu_fields() {
    return detail::by_name<Gpu>();
}
inline const auto& host_fields() {
    return detail::by_name<HostStats>();
}
inline const auto& cgroup_fields() {
    return detail::by_name<JobCgroup>();
}

}  // namespace stallscope::rates_fields
