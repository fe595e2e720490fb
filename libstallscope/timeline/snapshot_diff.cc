#include "libstallscope/timeline/snapshot_diff.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/detail/conversions/to_chars.hpp>

#include "libstallscope/model/nccl_json.h"
#include "libstallscope/model/snapshot_json_depth.h"

namespace stallscope {
namespace {

// The same text nlohmann's dump() gives a double (shortest round trip, "1.0" for integral values, null for
// NaN/inf), so a value read back is the same double of the same JSON type.
void append_double(std::string& out, double v) {
    if (!std::isfinite(v)) {
        out.append("null");
        return;
    }
    char buf[64];
    const char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(end - buf));
}

template <typename Integer>
void append_integer(std::string& out, Integer v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// A JSON Pointer segment: '~' -> "~0", '/' -> "~1".
void append_pointer_segment(std::string& path, std::string_view key) {
    path.push_back('/');
    for (char c : key) {
        if (c == '~')
            path.append("~0");
        else if (c == '/')
            path.append("~1");
        else
            path.push_back(c);
    }
}

bool same_double(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;  // -0.0 and 0.0 dump differently
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20) {
            out.append("\\u00");
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    out.push_back('"');
}

void SnapshotDiffEncoder::append_record(Json&& tree, std::string& out) {
    have_snapshot_ = false;  // previous_ no longer matches previous_snapshot_
    if (!have_previous_) {
        out.append(R"({"type":"sample","full":)");
        out.append(tree.dump(-1, ' ', false, Json::error_handler_t::replace));
        out.push_back('}');
        previous_ = std::move(tree);
        have_previous_ = true;
        return;
    }
    begin_changes();
    diff(previous_, tree);
    end_changes(out);
    previous_ = std::move(tree);
}

void SnapshotDiffEncoder::append_record(const Snapshot& s, std::string& out) {
    Snapshot& p = previous_snapshot_;
    // A part that appears or disappears changes the root's keys: the whole tree is compared (and set).
    if (!have_previous_ || !have_snapshot_ || p.nccl.empty() != s.nccl.empty() ||
        p.job_cgroup.has_value() != s.job_cgroup.has_value()) {
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
        if (before[i] != after[i]) diff_element(key, i, to_json_one(before[i] = after[i]));
}

void SnapshotDiffEncoder::begin_changes() {
    add_.clear();
    set_.clear();
    add_first_ = set_first_ = true;
    keys_used_ = 0;
    stack_.clear();
}

void SnapshotDiffEncoder::end_changes(std::string& out) {
    out.append(R"({"type":"sample")");
    // The pointers of the moved integers only when they differ from the last record's (a counter started or
    // stopped moving); the values always, in that order.
    if (keys_used_ != previous_keys_used_ ||
        !std::equal(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(keys_used_),
                    previous_keys_.begin())) {
        out.append(R"(,"keys":[)");
        for (std::size_t i = 0; i < keys_used_; ++i) {
            if (i) out.push_back(',');
            append_json_string(out, keys_[i]);
        }
        out.push_back(']');
        std::swap(keys_, previous_keys_);
        previous_keys_used_ = keys_used_;
    }
    if (!add_.empty()) out.append(R"(,"a":[)").append(add_).push_back(']');
    if (!set_.empty()) out.append(R"(,"set":{)").append(set_).push_back('}');
    out.push_back('}');
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

// The JSON Pointer of the node being compared, built only for the few nodes that changed.
const std::string& SnapshotDiffEncoder::path() {
    path_.clear();
    for (const auto& segment : stack_) {
        if (segment.key) {
            append_pointer_segment(path_, *segment.key);
        } else {
            path_.push_back('/');
            append_integer(path_, segment.index);
        }
    }
    return path_;
}

void SnapshotDiffEncoder::write_add_key() {
    if (!add_first_) add_.push_back(',');
    add_first_ = false;
    if (keys_used_ == keys_.size()) keys_.emplace_back();
    keys_[keys_used_++].assign(path());  // reuses the string's buffer once grown: no per-sample allocation
}

void SnapshotDiffEncoder::write_key(std::string& section, bool& first) {
    if (!first) section.push_back(',');
    first = false;
    append_json_string(section, path());
    section.push_back(':');
}

void SnapshotDiffEncoder::write_set(const Json& value) {
    write_key(set_, set_first_);
    switch (value.type()) {
        case Json::value_t::number_unsigned:
            append_integer(set_, value.get<std::uint64_t>());
            break;
        case Json::value_t::number_integer:
            append_integer(set_, value.get<std::int64_t>());
            break;
        case Json::value_t::number_float:
            append_double(set_, value.get<double>());
            break;
        case Json::value_t::null:
            set_.append("null");
            break;
        default:
            set_.append(value.dump(-1, ' ', false, Json::error_handler_t::replace));
    }
}

void SnapshotDiffEncoder::diff(const Json& before, const Json& after) {
    if (before.type() != after.type()) return write_set(after);
    switch (after.type()) {
        case Json::value_t::object: {
            if (before.size() != after.size()) return write_set(after);
            for (auto b = before.begin(), a = after.begin(); a != after.end(); ++a, ++b)
                if (a.key() != b.key()) return write_set(after);
            for (auto b = before.begin(), a = after.begin(); a != after.end(); ++a, ++b) {
                stack_.push_back({&a.key(), 0});
                diff(*b, *a);
                stack_.pop_back();
            }
            return;
        }
        case Json::value_t::array: {
            if (before.size() != after.size()) return write_set(after);
            for (std::size_t i = 0; i < after.size(); ++i) {
                stack_.push_back({nullptr, i});
                diff(before[i], after[i]);
                stack_.pop_back();
            }
            return;
        }
        case Json::value_t::number_unsigned: {
            const auto b = before.get<std::uint64_t>(), a = after.get<std::uint64_t>();
            if (a == b) return;
            // The difference as a signed 64-bit number when it is one; a reset counter far below the last
            // value is written whole.
            const std::uint64_t up = a - b, down = b - a;
            if (a > b && up <= static_cast<std::uint64_t>(INT64_MAX)) {
                write_add_key();
                append_integer(add_, up);
            } else if (a < b && down <= static_cast<std::uint64_t>(INT64_MAX)) {
                write_add_key();
                add_.push_back('-');
                append_integer(add_, down);
            } else {
                write_set(after);
            }
            return;
        }
        case Json::value_t::number_integer: {
            const auto b = before.get<std::int64_t>(), a = after.get<std::int64_t>();
            std::int64_t delta = 0;
            if (a == b) return;
            if (__builtin_sub_overflow(a, b, &delta)) return write_set(after);
            write_add_key();
            append_integer(add_, delta);
            return;
        }
        case Json::value_t::number_float:
            if (!same_double(before.get<double>(), after.get<double>())) write_set(after);
            return;
        default:
            if (before != after) write_set(after);
    }
}

void SnapshotDiffDecoder::keyframe(Json&& tree) {
    tree_ = std::move(tree);
    have_tree_ = true;
    nodes_.clear();
}

void SnapshotDiffDecoder::reset() {
    tree_ = Json();
    have_tree_ = false;
    nodes_.clear();
}

Json* SnapshotDiffDecoder::find(std::string_view pointer, std::string& problem) {
    if (!have_tree_) {
        problem = "a change record before any full sample (stream damaged?)";
        return nullptr;
    }
    if (const auto it = nodes_.find(pointer); it != nodes_.end()) return it->second;
    Json* node = &tree_;
    std::size_t at = 0;
    while (at < pointer.size()) {
        if (pointer[at] != '/') {
            problem = "bad JSON pointer '" + std::string(pointer) + "'";
            return nullptr;
        }
        const std::size_t end = std::min(pointer.find('/', at + 1), pointer.size());
        const std::string_view segment = pointer.substr(at + 1, end - at - 1);
        at = end;
        if (node->is_object()) {
            key_.clear();
            for (std::size_t i = 0; i < segment.size(); ++i) {
                if (segment[i] == '~' && i + 1 < segment.size() &&
                    (segment[i + 1] == '0' || segment[i + 1] == '1')) {
                    key_.push_back(segment[++i] == '0' ? '~' : '/');
                } else {
                    key_.push_back(segment[i]);
                }
            }
            const auto it = node->find(key_);
            if (it == node->end()) break;
            node = &*it;
        } else if (node->is_array()) {
            std::size_t index = 0;
            const auto r = std::from_chars(segment.data(), segment.data() + segment.size(), index);
            if (segment.empty() || r.ec != std::errc() || r.ptr != segment.data() + segment.size() ||
                index >= node->size())
                break;
            node = &(*node)[index];
        } else {
            break;
        }
        if (at == pointer.size()) {
            nodes_.emplace(std::string(pointer), node);
            return node;
        }
    }
    if (at == pointer.size() && pointer.empty()) return node;  // "" is the whole tree
    problem = "change to '" + std::string(pointer) + "', which the previous sample does not have";
    return nullptr;
}

bool SnapshotDiffDecoder::add(std::string_view pointer, std::int64_t delta, std::string& problem) {
    Json* node = find(pointer, problem);
    if (!node) return false;
    // Unsigned arithmetic: wraps like the writer's subtraction, and no signed overflow on bad input.
    if (node->is_number_unsigned()) {
        *node = node->get<std::uint64_t>() + static_cast<std::uint64_t>(delta);
    } else if (node->is_number_integer()) {
        *node = static_cast<std::int64_t>(static_cast<std::uint64_t>(node->get<std::int64_t>()) +
                                          static_cast<std::uint64_t>(delta));
    } else {
        problem = "\"add\" to '" + std::string(pointer) + "', which is not an integer";
        return false;
    }
    return true;
}

bool SnapshotDiffDecoder::set(std::string_view pointer, Json&& value, std::string& problem) {
    Json* node = find(pointer, problem);
    if (!node) return false;
    // Replacing a container invalidates every cached node under it.
    if (node->is_structured() || value.is_structured()) nodes_.clear();
    *node = std::move(value);
    return true;
}

}  // namespace stallscope
