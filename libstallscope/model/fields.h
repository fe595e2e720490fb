// One description per model struct (DCGM's field table, STYLE.md "One description per concept"): its
// members in JSON order, each with its key and what it is to the rest of the code. The JSON writer and
// reader (snapshot_json.cc), the sample line's text writer (snapshot_json_text.cc), the rates' counter
// lists (rates_fields.h) and the timeline's moving fields (timeline/moving_fields.h) are all derived from
// it, so a field added to a struct and to its description is written, read, compared and rated without a
// second list to keep in step. The descriptions themselves sit next to their structs in snapshot.h.
#pragma once

#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

namespace stallscope::fields {

enum Flag : unsigned {
    kNone = 0,
    // A number that moves from sample to sample (a counter, a gauge or a map of counters, always written):
    // the v2 timeline writer compares it in place and its reader writes its changes straight into the
    // sample it keeps (timeline/moving_fields.h).
    kMoving = 1u << 0,
    // A lifetime counter whose per-second rate Rates carries (rates_fields.h). On a part (a struct inside
    // the struct), its counters that carry `rate_mask` are rates, named `rate_prefix` + their key.
    kRate = 1u << 1,
    // A rate only where the part's parent takes it (the node's pressure stalls; the job's cgroup keeps
    // the three that say it waited on CPU, I/O and memory as a whole).
    kNodeRate = 1u << 2,
};

// One member: `Member` is its pointer (&Gpu::energy_mj), a template argument so that what is derived
// from it (a getter, a table of member pointers) is a constant.
template <auto Member>
struct Field {
    static constexpr auto member = Member;
    const char* key;
    unsigned flags = kNone;
    const char* rate_prefix = "";  // a part's rate names: rate_prefix + key ("psi_" + "io_full_total_us")
    unsigned rate_mask = kRate;    // a part: which of its counters' flags make them rates here
};

template <auto Member>
constexpr Field<Member> field(const char* key, unsigned flags = kNone, const char* rate_prefix = "",
                              unsigned rate_mask = kRate) {
    return {key, flags, rate_prefix, rate_mask};
}

// Specialised per struct in snapshot.h: `static constexpr auto fields = std::tuple{field<&T::m>("m"), ...};`
template <class T>
struct Description;

template <class T>
concept Described = requires {
    Description<T>::fields;
};

// The struct and the type of a member pointer given as a template argument.
template <auto Member>
struct MemberOf;
template <class Owner, class Value, Value Owner::*Member>
struct MemberOf<Member> {
    using owner = Owner;
    using type = Value;
};
template <auto Member>
using member_type = typename MemberOf<Member>::type;

template <class T>
inline constexpr bool is_optional = false;
template <class T>
inline constexpr bool is_optional<std::optional<T>> = true;
template <class T>
inline constexpr bool is_vector = false;
template <class T>
inline constexpr bool is_vector<std::vector<T>> = true;

// A part written only when present (absent means "not measured"): std::optional of a described struct or
// of a list of them. Other optionals are values, written as null when unset.
template <class V>
inline constexpr bool is_optional_part = false;
template <Described P>
inline constexpr bool is_optional_part<std::optional<P>> = true;
template <Described P>
inline constexpr bool is_optional_part<std::optional<std::vector<P>>> = true;

// A list of described structs (a part that is a list: a GPU's processes).
template <class V>
inline constexpr bool is_part_list = false;
template <Described P>
inline constexpr bool is_part_list<std::vector<P>> = true;

// Calls `visit(field)` for each field of T, in the description's order.
template <class T, class F>
constexpr void for_each_field(F&& visit) {
    std::apply([&](const auto&... f) { (visit(f), ...); }, Description<T>::fields);
}

template <class T>
inline constexpr std::size_t field_count =
    std::tuple_size_v<std::remove_cvref_t<decltype(Description<T>::fields)>>;

// The member a field names in `object` (const or not).
template <class F, class T>
constexpr decltype(auto) member_of(const F&, T& object) {
    return object.*std::remove_cvref_t<F>::member;
}

}  // namespace stallscope::fields
