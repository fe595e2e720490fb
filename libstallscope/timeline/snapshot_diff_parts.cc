// SnapshotDiffEncoder::append_record(const Snapshot&): the record of a sample built from the parts that
// changed (snapshot_diff.h), and for an interface, RDMA port or GPU whose only changes are its moving
// numbers, from those numbers alone: no JSON of the element is built, its previous tree's leaves are
// compared and updated in place. The output is the same as comparing the whole to_json trees.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/nccl_json.h"
#include "libstallscope/timeline/moving_fields.h"
#include "libstallscope/timeline/snapshot_diff.h"

namespace stallscope {
namespace {

using json_fields::or_null;

// The moving fields are derived from the same description to_json writes from (moving_fields.h): every
// key is one to_json writes for every element, by construction.
std::span<const Moving<NetInterface>> moving_fields(const NetInterface*) {
    return kMovingInterface;
}
std::span<const Moving<RdmaPort>> moving_fields(const RdmaPort*) {
    return kMovingRdmaPort;
}
std::span<const Moving<Gpu>> moving_fields(const Gpu*) {
    return kMovingGpu;
}

}  // namespace

void SnapshotDiffEncoder::append_record(const Snapshot& s, std::string& out) {
    Snapshot& p = previous_snapshot_;
    // The top-level keys this function walks: to_json of an empty snapshot's, plus nccl and job_cgroup
    // when present. A key to_json gained and this walk has not heard of shows as a different count, and
    // the whole tree is compared (a field added to the model still flows through unchanged).
    static const std::size_t kParts = to_json(Snapshot{}).size();
    constexpr std::size_t kWalked = 12;  // schema .. warnings below, without nccl and job_cgroup
    const std::size_t parts = kParts + !s.nccl.empty() + s.job_cgroup.has_value();
    // A part that appears or disappears changes the root's keys: the whole tree is compared (and set).
    if (!have_previous_ || !have_snapshot_ || p.nccl.empty() != s.nccl.empty() ||
        p.job_cgroup.has_value() != s.job_cgroup.has_value() || previous_.size() != parts ||
        kParts != kWalked) {
        append_record(to_json(s), out);
        p = s;
        have_snapshot_ = true;
        return;
    }
    // The parts in to_json's order, so the output is the same as the whole tree's comparison.
    begin_changes();
    part_hint_ = 0;
    part_missing_ = false;
    if (!same_double(p.time, s.time)) {
        // Readers derive "/time" from a finite "/unix_time" (snapshot_diff.h): kept, not written.
        if (std::isfinite(s.time))
            keep_part("time", format_rfc3339(s.time));
        else
            diff_part("time", format_rfc3339(s.time));
        diff_part("unix_time", s.time);
        p.time = s.time;
    }
    if (p.host != s.host) diff_part("host", Json(p.host = s.host));
    if (p.context != s.context) diff_part("context", context_to_json(p.context = s.context));
    if (p.host_stats != s.host_stats)
        diff_part("host_stats", host_stats_to_json(p.host_stats = s.host_stats));
    diff_elements("interfaces", p.interfaces, s.interfaces, interface_to_json);
    diff_elements("rdma", p.rdma, s.rdma, rdma_port_to_json);
    diff_elements("gpus", p.gpus, s.gpus, gpu_to_json);
    if (p.xid_events != s.xid_events)
        diff_part("xid_events", xid_events_to_json(p.xid_events = s.xid_events));
    if (!s.nccl.empty() && p.nccl != s.nccl) diff_part("nccl", nccl_to_json(p.nccl = s.nccl));
    if (s.job_cgroup && p.job_cgroup != s.job_cgroup)
        diff_part("job_cgroup", job_cgroup_to_json(*(p.job_cgroup = s.job_cgroup)));
    if (p.collector_failures != s.collector_failures)
        diff_part("collector_failures",
                  collector_failures_to_json(p.collector_failures = s.collector_failures));
    if (p.warnings != s.warnings) diff_part("warnings", Json(p.warnings = s.warnings));
    if (part_missing_) {
        // previous_ did not have the shape to_json gives (not expected): what is left of the difference
        // comes from comparing the whole trees; the parts already compared are equal by now.
        Json tree = to_json(s);
        stack_.clear();
        diff(previous_, tree);
        previous_ = std::move(tree);
    }
    end_changes(out);
}

// One element at a time when the array keeps its length (an unchanged one costs an operator==), else
// the whole array (which diff() writes as a "set").
template <typename T, typename F>
void SnapshotDiffEncoder::diff_elements(const char* key, std::vector<T>& before, const std::vector<T>& after,
                                        F to_json_one) {
    if (before.size() != after.size()) {
        Json array = Json::array();
        for (const auto& item : after) array.push_back(to_json_one(item));
        diff_part(key, std::move(array));
        before = after;
        return;
    }
    for (std::size_t i = 0; i < after.size(); ++i)
        if (before[i] != after[i] && !diff_moving(key, i, before[i], after[i]))
            diff_element(key, i, to_json_one(before[i] = after[i]));
}

// An element whose only changes are in its moving numbers: those leaves of the previous tree compared
// and replaced in place. False (nothing written) when anything else changed: the caller compares the
// element's whole JSON.
template <typename T>
bool SnapshotDiffEncoder::diff_moving(const char* key, std::size_t index, T& before, const T& after) {
    const auto fields = moving_fields(&after);
    if (fields.empty()) return false;
    for (const auto& f : fields) {
        if (f.counter) {
            before.*f.counter = after.*f.counter;
        } else if (f.gauge) {
            before.*f.gauge = after.*f.gauge;
        } else {
            // Values only, while the names match (a counter appearing takes the general path; `before`
            // is then assigned whole by the caller).
            auto& to = before.*f.map;
            const auto& from = after.*f.map;
            if (to.size() != from.size()) return false;
            auto j = from.begin();
            for (auto& [name, value] : to) {
                if (name != j->first) return false;
                value = (j++)->second;
            }
        }
    }
    if (before != after) return false;
    Json* array = previous_part(key);
    if (!array) return false;
    if (!array->is_array() || index >= array->size() || !(*array)[index].is_object()) {
        stack_.pop_back();
        return false;
    }
    stack_.push_back({nullptr, index});
    auto& items = static_cast<Json::object_t::Container&>((*array)[index].get_ref<Json::object_t&>());
    std::size_t next = 0;  // the table is in to_json's order: usually the next entry
    for (auto& [name, node] : items) {
        const Moving<T>* f = nullptr;
        for (std::size_t k = 0, i = next; k < fields.size(); ++k, i = i + 1 < fields.size() ? i + 1 : 0)
            if (name == fields[i].key) {
                f = &fields[i];
                next = i + 1 < fields.size() ? i + 1 : 0;
                break;
            }
        if (!f) continue;
        if (f->counter && diff_counter_leaf(node, name, after.*f->counter)) continue;
        stack_.push_back({&name, 0});
        if (f->counter)
            diff_leaf(node, or_null(after.*f->counter));
        else if (f->gauge)
            diff_leaf(node, or_null(after.*f->gauge));
        else
            diff_counters(node, after.*f->map);
        stack_.pop_back();
    }
    stack_.pop_back();
    stack_.pop_back();
    return true;
}

void SnapshotDiffEncoder::diff_leaf(Json& node, Json&& now) {
    diff(node, now);
    node = std::move(now);
}

// diff_leaf(node, or_null(value)) for the common case, an unsigned counter that is still one: compared in
// place, without building its JSON or its path unless it moved (most of a port's ~90 counters do not).
// False, nothing done, for anything else (null on either side, a reset too large for a signed delta):
// the caller takes diff_leaf, which writes those cases.
bool SnapshotDiffEncoder::diff_counter_leaf(Json& node, const std::string& key, const Counter& value) {
    if (!value || !node.is_number_unsigned()) return false;
    auto& before = node.get_ref<Json::number_unsigned_t&>();
    const std::uint64_t a = *value, b = before;
    if (a == b) return true;
    const std::uint64_t up = a - b, down = b - a;  // as diff() writes an unsigned leaf's change
    if ((a > b ? up : down) > static_cast<std::uint64_t>(INT64_MAX)) return false;
    stack_.push_back({&key, 0});
    write_add(a > b ? static_cast<std::int64_t>(up) : -static_cast<std::int64_t>(down));
    stack_.pop_back();
    before = a;
    return true;
}

// A counter map's object, leaf by leaf when it holds the map's names (it was made from the previous
// sample's map, which has them), else the whole object.
void SnapshotDiffEncoder::diff_counters(Json& node, const CounterMap& m) {
    bool same = node.is_object() && node.size() == m.size();
    if (same) {
        auto& items = static_cast<Json::object_t::Container&>(node.get_ref<Json::object_t&>());
        auto j = m.begin();
        for (std::size_t i = 0; same && i < items.size(); ++i, ++j) same = items[i].first == j->first;
        if (same) {
            j = m.begin();
            for (auto& [name, leaf] : items) {
                const Counter& value = (j++)->second;
                if (diff_counter_leaf(leaf, name, value)) continue;
                stack_.push_back({&name, 0});
                diff_leaf(leaf, or_null(value));
                stack_.pop_back();
            }
            return;
        }
    }
    Json object = json_fields::object_of(m.size());
    for (const auto& [name, value] : m) json_fields::put(object, name, or_null(value));
    diff_leaf(node, std::move(object));
}

// The previous tree's top-level value under `key`, pushed on the path; null when it has none.
Json* SnapshotDiffEncoder::previous_part(const char* key) {
    auto& items = static_cast<Json::object_t::Container&>(previous_.get_ref<Json::object_t&>());
    const std::size_t n = items.size();
    for (std::size_t k = 0, i = part_hint_ < n ? part_hint_ : 0; k < n; ++k, i = i + 1 < n ? i + 1 : 0) {
        if (items[i].first != key) continue;
        part_hint_ = i + 1;
        stack_.push_back({&items[i].first, 0});
        return &items[i].second;
    }
    part_missing_ = true;
    return nullptr;
}

void SnapshotDiffEncoder::diff_part(const char* key, Json&& after) {
    Json* before = previous_part(key);
    if (!before) return;
    diff(*before, after);
    stack_.pop_back();
    *before = std::move(after);
}

void SnapshotDiffEncoder::keep_part(const char* key, Json&& after) {
    Json* before = previous_part(key);
    if (!before) return;
    stack_.pop_back();
    *before = std::move(after);
}

void SnapshotDiffEncoder::diff_element(const char* key, std::size_t index, Json&& after) {
    Json* array = previous_part(key);
    if (!array) return;
    if (array->is_array() && index < array->size()) {
        stack_.push_back({nullptr, index});
        diff((*array)[index], after);
        stack_.pop_back();
        (*array)[index] = std::move(after);
    } else {
        part_missing_ = true;
    }
    stack_.pop_back();
}

}  // namespace stallscope
