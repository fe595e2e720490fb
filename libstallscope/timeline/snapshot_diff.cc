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

void SnapshotDiffEncoder::begin_changes() {
    set_.clear();
    set_first_ = true;
    moved_used_ = 0;
    removed_used_ = 0;
    stack_.clear();
}

namespace {
constexpr std::uint32_t kIdleRecords = 64;  // a listed pointer that stayed 0 this long is dropped

// `pointer` is `prefix` or below it.
bool under(std::string_view pointer, std::string_view prefix) {
    return pointer.starts_with(prefix) && (pointer.size() == prefix.size() || pointer[prefix.size()] == '/');
}
}  // namespace

// Places this record's moved integers in the kept "keys" list (appending new ones) and drops the
// pointers that stayed 0 too long or whose node was replaced; `rewrite` when the list changed.
void SnapshotDiffEncoder::update_key_list(bool& rewrite) {
    const std::size_t kept = list_used_;
    std::fill(list_delta_.begin(), list_delta_.begin() + static_cast<std::ptrdiff_t>(kept), 0);
    std::size_t next = 0;  // moved pointers come in the tree's order, which is mostly the list's
    for (std::size_t i = 0; i < moved_used_; ++i) {
        std::size_t at = next;
        if (at >= list_used_ || list_[at] != moved_[i]) {
            const auto it = list_index_.find(std::string_view(moved_[i]));
            if (it != list_index_.end()) {
                at = it->second;
            } else {
                at = list_used_++;
                if (at == list_.size()) {
                    list_.emplace_back();
                    list_delta_.push_back(0);
                    list_idle_.push_back(0);
                }
                list_[at].assign(moved_[i]);
                rewrite = true;
            }
        }
        list_delta_[at] = moved_delta_[i];
        list_idle_[at] = 0;
        next = at + 1;
    }
    // Pointers that did not move: older by one record; dropped when idle too long or replaced by a
    // "set" (the next record's tree may not have them).
    std::size_t out = 0;
    for (std::size_t j = 0; j < list_used_; ++j) {
        bool drop = false;
        if (list_delta_[j] == 0) {
            drop = ++list_idle_[j] >= kIdleRecords;
            for (std::size_t r = 0; !drop && r < removed_used_; ++r) drop = under(list_[j], removed_[r]);
        }
        if (drop) {
            rewrite = true;
            continue;
        }
        if (out != j) {
            std::swap(list_[out], list_[j]);
            list_delta_[out] = list_delta_[j];
            list_idle_[out] = list_idle_[j];
        }
        ++out;
    }
    list_used_ = out;
    if (rewrite) {  // rare within a frame once the moving counters are listed
        list_index_.clear();
        for (std::size_t j = 0; j < list_used_; ++j)
            list_index_.emplace(list_[j], static_cast<std::uint32_t>(j));
    }
}

void SnapshotDiffEncoder::end_changes(std::string& out) {
    out.append(R"({"type":"sample")");
    bool rewrite = false;
    update_key_list(rewrite);
    if (rewrite) {
        out.append(R"(,"keys":[)");
        for (std::size_t i = 0; i < list_used_; ++i) {
            if (i) out.push_back(',');
            append_json_string(out, list_[i]);
        }
        out.push_back(']');
    }
    if (moved_used_ > 0) {
        out.append(R"(,"a":[)");
        for (std::size_t i = 0; i < list_used_; ++i) {
            if (i) out.push_back(',');
            append_integer(out, list_delta_[i]);
        }
        out.push_back(']');
    }
    if (!set_.empty()) out.append(R"(,"set":{)").append(set_).push_back('}');
    out.push_back('}');
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

void SnapshotDiffEncoder::write_add(std::int64_t delta) {
    if (moved_used_ == moved_.size()) {
        moved_.emplace_back();
        moved_delta_.push_back(0);
    }
    moved_delta_[moved_used_] = delta;
    moved_[moved_used_++].assign(path());  // reuses the string's buffer once grown: no per-sample allocation
}

// A "set" of a node that may hold listed pointers (an integer, or a container): they go from the list.
void SnapshotDiffEncoder::set_replacing(const Json& before, const Json& after) {
    write_set(after);
    if (!before.is_structured() && !before.is_number_integer()) return;
    if (removed_used_ == removed_.size()) removed_.emplace_back();
    removed_[removed_used_++].assign(path_);  // write_set just built it
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
    if (before.type() != after.type()) return set_replacing(before, after);
    switch (after.type()) {
        case Json::value_t::object: {
            if (before.size() != after.size()) return set_replacing(before, after);
            for (auto b = before.begin(), a = after.begin(); a != after.end(); ++a, ++b)
                if (a.key() != b.key()) return set_replacing(before, after);
            for (auto b = before.begin(), a = after.begin(); a != after.end(); ++a, ++b) {
                stack_.push_back({&a.key(), 0});
                diff(*b, *a);
                stack_.pop_back();
            }
            return;
        }
        case Json::value_t::array: {
            if (before.size() != after.size()) return set_replacing(before, after);
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
            if (a > b && up <= static_cast<std::uint64_t>(INT64_MAX))
                write_add(static_cast<std::int64_t>(up));
            else if (a < b && down <= static_cast<std::uint64_t>(INT64_MAX))
                write_add(-static_cast<std::int64_t>(down));
            else
                set_replacing(before, after);
            return;
        }
        case Json::value_t::number_integer: {
            const auto b = before.get<std::int64_t>(), a = after.get<std::int64_t>();
            std::int64_t delta = 0;
            if (a == b) return;
            if (__builtin_sub_overflow(a, b, &delta)) return set_replacing(before, after);
            write_add(delta);
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

bool SnapshotDiffDecoder::add(std::string_view pointer, std::int64_t delta, std::string& problem,
                              const Json** changed) {
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
    if (changed) *changed = node;
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
