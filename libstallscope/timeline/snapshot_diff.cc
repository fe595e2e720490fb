#include "libstallscope/timeline/snapshot_diff.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/json_text.h"
#include "libstallscope/model/nccl_json.h"
#include "libstallscope/timeline/binary_record.h"

namespace stallscope {
namespace {

// The same text nlohmann's dump() gives a double (shortest round trip, "1.0" for integral values, null for
// NaN/inf), so a value read back is the same double of the same JSON type.
void append_float_text(std::string& out, double v) {
    char buf[kMaxCompactNumberChars];
    out.append(buf, write_compact_float(buf, v));
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
    derive_time(tree);
    diff(previous_, tree);
    end_changes(out);
    previous_ = std::move(tree);
}

void SnapshotDiffEncoder::begin_changes() {
    set_.clear();
    set_first_ = true;
    removed_used_ = 0;
    stack_.clear();
    keys_.begin_record();
    gauges_.begin_record();
}

namespace {

// The source the infiniband source derives `pointer` from (an RDMA port's rx_bytes / tx_bytes are
// port_rcv_data / port_xmit_data x 4, data_words_to_bytes), or "" when it derives nothing.
std::string_view derivable(std::string_view pointer, std::string& source, std::uint64_t& factor) {
    constexpr std::string_view kPrefix = "/rdma/";
    if (!pointer.starts_with(kPrefix)) return {};
    const std::size_t slash = pointer.find('/', kPrefix.size());
    if (slash == std::string_view::npos || slash == kPrefix.size()) return {};
    const std::string_view port = pointer.substr(0, slash + 1);  // "/rdma/3/"
    const std::string_view member = pointer.substr(slash + 1);
    const char* counter = member == "rx_bytes"   ? "counters/port_rcv_data"
                          : member == "tx_bytes" ? "counters/port_xmit_data"
                                                 : nullptr;
    if (!counter) return {};
    source.assign(port).append(counter);
    factor = 4;
    return source;
}

}  // namespace

// A derived "keys" entry stays derived while its difference is factor x its source's, in the arithmetic a
// reader uses; else it is listed plain from then on (the list is rewritten). A pointer appended this record
// (the list is rewritten anyway) is listed derived when it can be and the relation holds now.
void SnapshotDiffEncoder::check_derived() {
    std::string source;
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        auto& e = keys_[i];
        if (e.slot.factor == 0) {
            std::uint64_t factor = 0;
            if (!e.fresh || derivable(e.pointer, source, factor).empty()) continue;
            e.slot.source.assign(source);
            e.slot.factor = factor;
        }
        const std::ptrdiff_t at = keys_.find(e.slot.source);
        bool holds = at >= 0 && keys_[static_cast<std::size_t>(at)].slot.factor == 0;
        if (holds) {
            const auto& src = keys_[static_cast<std::size_t>(at)];
            const std::uint64_t src_delta = src.moved ? static_cast<std::uint64_t>(src.slot.delta) : 0;
            const std::uint64_t delta = e.moved ? static_cast<std::uint64_t>(e.slot.delta) : 0;
            holds = e.slot.factor * src_delta == delta;
        }
        if (holds) continue;
        e.slot.factor = 0;
        if (!e.fresh) keys_.mark_changed();
    }
}

void SnapshotDiffEncoder::end_changes(std::string& out) {
    keys_.end_record(removed_, removed_used_);
    gauges_.end_record(removed_, removed_used_);
    check_derived();
    if (binary_records_ && !keys_.changed() && !gauges_.changed() && set_.empty()) return append_binary(out);
    out.append(R"({"type":"sample")");
    if (keys_.changed()) {
        out.append(R"(,"keys":[)");
        for (std::size_t i = 0; i < keys_.size(); ++i) {
            if (i) out.push_back(',');
            const auto& e = keys_[i];
            if (e.slot.factor == 0) {
                append_json_string(out, e.pointer);
                continue;
            }
            out.push_back('[');
            append_json_string(out, e.pointer);
            out.push_back(',');
            append_integer(out, e.slot.factor);
            out.push_back(',');
            append_json_string(out, e.slot.source);
            out.push_back(']');
        }
        out.push_back(']');
    }
    if (keys_.any_moved()) {
        out.append(R"(,"a":[)");
        bool first = true;
        for (std::size_t i = 0; i < keys_.size(); ++i) {
            const auto& e = keys_[i];
            if (e.slot.factor != 0) continue;
            if (!first) out.push_back(',');
            first = false;
            append_integer(out, e.moved ? e.slot.delta : 0);
        }
        out.push_back(']');
    }
    if (gauges_.changed()) {
        out.append(R"(,"gkeys":[)");
        for (std::size_t i = 0; i < gauges_.size(); ++i) {
            if (i) out.push_back(',');
            append_json_string(out, gauges_[i].pointer);
        }
        out.push_back(']');
    }
    if (gauges_.any_moved()) {
        out.append(R"(,"g":[)");
        for (std::size_t i = 0; i < gauges_.size(); ++i) {
            if (i) out.push_back(',');
            append_float_text(out, gauges_[i].slot);
        }
        out.push_back(']');
    }
    if (!set_.empty()) out.append(R"(,"set":{)").append(set_).push_back('}');
    out.push_back('}');
}

// The plain record's numbers as binary_record.h lays them out: the same "a" and "g" end_changes writes.
void SnapshotDiffEncoder::append_binary(std::string& out) {
    const bool has_a = keys_.any_moved(), has_g = gauges_.any_moved();
    out.push_back(kBinaryRecordMarker);
    append_record_varint(out, (has_a ? kBinaryRecordHasA : 0) | (has_g ? kBinaryRecordHasG : 0));
    if (has_a) {
        std::size_t plain = 0;
        for (std::size_t i = 0; i < keys_.size(); ++i) plain += keys_[i].slot.factor == 0;
        append_record_varint(out, plain);
        for (std::size_t i = 0; i < keys_.size(); ++i) {
            const auto& e = keys_[i];
            if (e.slot.factor == 0) append_record_delta(out, e.moved ? e.slot.delta : 0);
        }
    }
    if (has_g) {
        append_record_varint(out, gauges_.size());
        for (std::size_t i = 0; i < gauges_.size(); ++i) append_record_gauge(out, gauges_[i].slot);
    }
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
    keys_.moved(path()).slot.delta = delta;
}

// The node at path_ (just built) was "set": listed pointers at or under it go from the lists.
void SnapshotDiffEncoder::mark_removed() {
    if (removed_used_ == removed_.size()) removed_.emplace_back();
    removed_[removed_used_++].assign(path_);  // reuses the string's buffer once grown
}

// A "set" of a node that may hold listed pointers (a number, or a container): they go from the lists.
void SnapshotDiffEncoder::set_replacing(const Json& before, const Json& after) {
    write_set(after);
    if (before.is_structured() || before.is_number()) mark_removed();
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
            append_float_text(set_, value.get<double>());
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
        case Json::value_t::number_float: {
            const double b = before.get<double>(), a = after.get<double>();
            if (same_double(b, a)) return;
            // A gauge (or the time) goes in "g"; NaN / inf dump as null, which only a "set" can write.
            if (std::isfinite(a))
                gauges_.moved(path()).slot = a;
            else
                set_replacing(before, after);
            return;
        }
        default:
            if (before != after) write_set(after);
    }
}

void SnapshotDiffDecoder::keyframe(Json&& tree) {
    tree_ = std::move(tree);
    have_tree_ = true;
    moved_nodes();
    remember_unix_time();
}

void SnapshotDiffDecoder::reset() {
    tree_ = Json();
    have_tree_ = false;
    moved_nodes();
    remember_unix_time();
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

Json* SnapshotDiffDecoder::resolve(NodeRef& ref, std::string_view pointer, std::string& problem) {
    if (ref.generation != generation_ || !ref.node) {
        ref.node = find(pointer, problem);
        ref.generation = generation_;
    }
    return ref.node;
}

bool SnapshotDiffDecoder::add(std::string_view pointer, std::int64_t delta, std::string& problem,
                              const Json** changed) {
    NodeRef ref;
    if (!add(ref, pointer, delta, problem)) return false;
    if (changed) *changed = ref.node;
    return true;
}

bool SnapshotDiffDecoder::add_found(NodeRef& ref, std::string_view pointer, std::int64_t delta,
                                    std::string& problem) {
    Json* node = resolve(ref, pointer, problem);
    if (!node) return false;
    // Unsigned arithmetic: wraps like the writer's subtraction, and no signed overflow on bad input. In
    // place: assigning a new Json builds, swaps and destroys a temporary for each of the ~500 counters a
    // dgx-h100 record moves (7 % of its replay).
    if (node->is_number_unsigned()) {
        node->get_ref<Json::number_unsigned_t&>() += static_cast<std::uint64_t>(delta);
    } else if (node->is_number_integer()) {
        auto& value = node->get_ref<Json::number_integer_t&>();
        value =
            static_cast<std::int64_t>(static_cast<std::uint64_t>(value) + static_cast<std::uint64_t>(delta));
    } else {
        problem = "\"add\" to '" + std::string(pointer) + "', which is not an integer";
        return false;
    }
    return true;
}

bool SnapshotDiffDecoder::set_number(std::string_view pointer, double value, bool& changed,
                                     std::string& problem) {
    NodeRef ref;
    return set_number(ref, pointer, value, changed, problem);
}

bool SnapshotDiffDecoder::set_number(NodeRef& ref, std::string_view pointer, double value, bool& changed,
                                     std::string& problem) {
    Json* node = resolve(ref, pointer, problem);
    if (!node) return false;
    const bool was_float = node->is_number_float();
    changed = !was_float || !same_double(node->get_ref<const Json::number_float_t&>(), value);
    if (!changed) return true;
    if (was_float) {
        node->get_ref<Json::number_float_t&>() = value;  // in place, as add() does
        return true;
    }
    if (node->is_structured()) moved_nodes();
    *node = value;
    return true;
}

bool SnapshotDiffDecoder::set(std::string_view pointer, Json&& value, std::string& problem) {
    Json* node = find(pointer, problem);
    if (!node) return false;
    if (pointer.empty() || pointer == "/time") time_set_ = true;  // not derived (snapshot_diff.h)
    // Replacing a container invalidates every cached node under it.
    if (node->is_structured() || value.is_structured()) moved_nodes();
    *node = std::move(value);
    return true;
}

}  // namespace stallscope
