// visit_timeline: v1 and v2 lines parsed with simdjson (On Demand would save little: most of a v2 line is
// read anyway), snapshots read through snapshot_from_json so the reader follows every field the model
// adds without a change here. A v2 change record re-reads only the fields (and interface / RDMA port /
// GPU elements) its pointers touched into the snapshot kept from the previous sample.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "libstallscope/timeline/kept_counter.h"
#include "libstallscope/timeline/timeline.h"

namespace stallscope {
namespace {

static_assert(TimelineInput::kLinePadding >= simdjson::SIMDJSON_PADDING);

// The tree nlohmann's parser would give for the same text (non-negative integers unsigned, as it does).
Json to_tree(simdjson::dom::element e) {
    switch (e.type()) {
        case simdjson::dom::element_type::ARRAY: {
            Json a = Json::array();
            simdjson::dom::array array;
            if (e.get(array) == simdjson::SUCCESS)
                for (simdjson::dom::element child : array) a.push_back(to_tree(child));
            return a;
        }
        case simdjson::dom::element_type::OBJECT: {
            Json o = Json::object();
            simdjson::dom::object object;
            if (e.get(object) != simdjson::SUCCESS) return o;
            // Appended (ordered_json's operator[] searches the keys on every insert: quadratic in a
            // counter map's size), then checked for a repeated key, which a hand-edited file may hold:
            // that rare object is rebuilt with operator[], the last value winning, as nlohmann's parser
            // would.
            auto& items = o.get_ref<Json::object_t&>();
            items.reserve(object.size());
            for (simdjson::dom::key_value_pair field : object)
                items.emplace_back(std::string(field.key), to_tree(field.value));
            if (items.size() > 1) {
                thread_local std::vector<std::string_view> keys;  // reused: the children are done
                keys.clear();
                for (const auto& item : items) keys.push_back(item.first);
                std::sort(keys.begin(), keys.end());
                if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) {
                    Json unique = Json::object();
                    for (auto& item : items) unique[item.first] = std::move(item.second);
                    return unique;
                }
            }
            return o;
        }
        case simdjson::dom::element_type::INT64: {
            std::int64_t v = 0;
            if (e.get(v) != simdjson::SUCCESS) break;
            return v >= 0 ? Json(static_cast<std::uint64_t>(v)) : Json(v);
        }
        case simdjson::dom::element_type::UINT64: {
            std::uint64_t v = 0;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(v);
        }
        case simdjson::dom::element_type::DOUBLE: {
            double v = 0;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(v);
        }
        case simdjson::dom::element_type::STRING: {
            std::string_view v;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(std::string(v));
        }
        case simdjson::dom::element_type::BOOL: {
            bool v = false;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(v);
        }
        case simdjson::dom::element_type::NULL_VALUE:
            break;
    }
    return Json(nullptr);
}

std::string_view string_field(simdjson::dom::object object, const char* key) {
    std::string_view value;
    if (object[key].get_string().get(value) != simdjson::SUCCESS) return {};
    return value;
}

class Reader {
  public:
    Reader(const std::string& name, TimelineVisitor& visitor, std::vector<std::string>& warnings)
        : name_(name), visitor_(visitor), warnings_(warnings) {}

    void warn(std::size_t line, const std::string& text) {
        if (++warning_count_ <= kMaxWarnings)
            warnings_.push_back(name_ + ":" + std::to_string(line) + ": " + text);
    }

    bool run(TimelineInput& input, std::string& error) {
        changes_ = false;
        std::string_view text;
        bool terminated = true;
        for (;;) {
            const auto next = input.next(text, terminated, error);
            if (next == TimelineInput::Next::error) return false;
            if (next == TimelineInput::Next::end) break;
            changes_ = changes_ || input.compressed();
            if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
            if (!line(text, terminated, input.line_number()) && !recognised_) {
                error = name_ + ": not a stallscope timeline (line " + std::to_string(input.line_number()) +
                        " is not a timeline line)";
                return false;
            }
        }
        if (!recognised_) {
            error = name_ + ": not a stallscope timeline (" +
                    (input.empty() ? "empty" : "no timeline lines") + ")";
            return false;
        }
        if (warning_count_ > kMaxWarnings)
            warnings_.push_back(name_ + ": " + std::to_string(warning_count_ - kMaxWarnings) +
                                " more warnings like these not shown");
        return true;
    }

  private:
    // One line; false when it is not a line of a timeline (bad JSON, another kind of object).
    bool line(std::string_view text, bool terminated, std::size_t number) {
        simdjson::dom::element doc;
        simdjson::dom::object object;
        if (parser_.parse(text.data(), text.size(), false).get(doc) != simdjson::SUCCESS ||
            doc.get_object().get(object) != simdjson::SUCCESS) {
            if (recognised_)
                warn(number, !terminated ? "torn last line skipped (helper killed mid-write?)"
                                         : "not a JSON object, skipped");
            return false;
        }
        const std::string_view type = string_field(object, "type");
        if (type == "sample" || (type.empty() && string_field(object, "schema") == kSnapshotSchema)) {
            recognised_ = true;
            sample(doc, object, number);
        } else if (type == "header") {
            recognised_ = true;
            if (string_field(object, "schema") == kTimelineSchemaV2) changes_ = true;
            visitor_.header(to_tree(doc));
        } else if (type == "event" && recognised_) {
            visitor_.event(to_tree(doc));
        } else if (type == "verdict" && recognised_) {
            visitor_.verdict(to_tree(doc));
        } else {
            if (recognised_) warn(number, "unknown line type '" + std::string(type) + "', skipped");
            return false;
        }
        return true;
    }

    void sample(simdjson::dom::element doc, simdjson::dom::object object, std::size_t number) {
        simdjson::dom::element full;
        const bool record = changes_ || object["full"].error() == simdjson::SUCCESS ||
                            object["a"].error() == simdjson::SUCCESS ||
                            object["add"].error() == simdjson::SUCCESS ||
                            object["set"].error() == simdjson::SUCCESS;
        if (!record) {  // v1: the snapshot is the line itself
            emit(to_tree(doc), number);
        } else if (object["full"].get(full) == simdjson::SUCCESS) {
            decoder_.keyframe(to_tree(full));
            add_keys_used_ = 0;
            add_targets_.clear();
            emit_kept(number);
        } else if (apply_changes(object, number)) {
            emit_changed(number);
        }
    }

    // What a change pointer touched, in snapshot_from_json's terms.
    struct Target {
        SnapshotField field = SnapshotField::none;
        bool everything = false;                             // "" (the root), or a key we cannot place
        std::size_t element = static_cast<std::size_t>(-1);  // interfaces / rdma / gpus index
    };

    static Target target_of(std::string_view pointer) {
        Target t;
        if (pointer.empty() || pointer[0] != '/') {
            t.everything = true;
            return t;
        }
        const std::size_t end = std::min(pointer.find('/', 1), pointer.size());
        const std::string_view key = pointer.substr(1, end - 1);
        if (key.find('~') != std::string_view::npos) {  // escaped: not one of ours, re-read it all
            t.everything = true;
            return t;
        }
        t.field = snapshot_field(key);
        if ((t.field == SnapshotField::interfaces || t.field == SnapshotField::rdma ||
             t.field == SnapshotField::gpus) &&
            end < pointer.size()) {
            const std::size_t next = std::min(pointer.find('/', end + 1), pointer.size());
            std::size_t index = 0;
            const char* first = pointer.data() + end + 1;
            const char* last = pointer.data() + next;
            const auto r = std::from_chars(first, last, index);
            if (first != last && r.ec == std::errc() && r.ptr == last) t.element = index;
        }
        return t;
    }

    void touch(const Target& t) {
        if (t.everything) {
            dirty_everything_ = true;
            return;
        }
        if (t.field == SnapshotField::none) return;  // "schema", or a key snapshot_from_json ignores
        const auto f = static_cast<std::size_t>(t.field);
        if (t.element == static_cast<std::size_t>(-1)) {
            dirty_field_[f] = true;
            return;
        }
        // The index named a node the decoder just changed, so it is within the array: flags stay
        // bounded by the tree, and each element is re-read once however many changes it had.
        auto& seen = element_seen_[f];
        if (t.element >= seen.size()) seen.resize(t.element + 1, 0);
        if (seen[t.element]) return;
        seen[t.element] = 1;
        dirty_elements_[f].push_back(t.element);
    }

    void clear_dirty() {
        dirty_everything_ = false;
        dirty_field_.fill(false);
        for (std::size_t f = 0; f < dirty_elements_.size(); ++f) {
            for (const std::size_t i : dirty_elements_[f]) element_seen_[f][i] = 0;
            dirty_elements_[f].clear();
        }
    }

    bool apply_changes(simdjson::dom::object object, std::size_t number) {
        simdjson::dom::object changes;
        simdjson::dom::array list;
        clear_dirty();
        if (object["keys"].get_array().get(list) == simdjson::SUCCESS) {
            // The list changes whenever a counter starts or stops moving (every second on a busy node):
            // its strings are assigned over the last list's, which allocates nothing once grown.
            add_keys_used_ = 0;
            add_targets_.clear();
            for (simdjson::dom::element key : list) {
                std::string_view text;
                if (key.get_string().get(text) != simdjson::SUCCESS) {
                    add_keys_used_ = 0;
                    add_targets_.clear();
                    problem_ = "\"keys\" holds a non-string";
                    return broken(number);
                }
                if (add_keys_used_ == add_keys_.size()) {
                    add_keys_.emplace_back();
                    add_kept_.emplace_back();
                }
                parse_kept_counter(text, add_kept_[add_keys_used_]);
                add_keys_[add_keys_used_++].assign(text);
                add_targets_.push_back(target_of(text));
            }
        }
        if (object["a"].get_array().get(list) == simdjson::SUCCESS) {
            std::size_t i = 0;
            for (simdjson::dom::element value : list) {
                std::int64_t delta = 0;
                if (i >= add_keys_used_ || value.get_int64().get(delta) != simdjson::SUCCESS) {
                    problem_ = "\"a\" does not match \"keys\"";
                    return broken(number);
                }
                // A listed counter that did not move is a 0 (snapshot_diff.h): nothing to apply or re-read.
                if (delta != 0) {
                    const Json* node = nullptr;
                    if (!decoder_.add(add_keys_[i], delta, problem_, &node)) return broken(number);
                    // A counter snapshot_from_json would read as this unsigned value: written straight
                    // into the kept snapshot, its element not re-read.
                    Counter* kept = kept_clean_ && node->is_number_unsigned()
                                        ? kept_counter(kept_, add_kept_[i])
                                        : nullptr;
                    if (kept)
                        *kept = node->get<std::uint64_t>();
                    else
                        touch(add_targets_[i]);
                }
                ++i;
            }
            if (i != add_keys_used_) {
                problem_ = "\"a\" does not match \"keys\"";
                return broken(number);
            }
        }
        if (object["add"].get_object().get(changes) == simdjson::SUCCESS)
            for (simdjson::dom::key_value_pair field : changes) {
                std::int64_t delta = 0;
                if (field.value.get_int64().get(delta) != simdjson::SUCCESS) {
                    problem_ = "\"add\" of a non-integer to '" + std::string(field.key) + "'";
                    return broken(number);
                }
                if (!decoder_.add(field.key, delta, problem_)) return broken(number);
                touch(target_of(field.key));
            }
        if (object["set"].get_object().get(changes) == simdjson::SUCCESS)
            for (simdjson::dom::key_value_pair field : changes) {
                if (!decoder_.set(field.key, to_tree(field.value), problem_)) return broken(number);
                // A GPU gauge set to a number (power, temperature: every second) is placed in the kept
                // snapshot as Reader::number reads it; anything else re-reads what it touched.
                double value = 0;
                Gauge* gauge = nullptr;
                if (kept_clean_ && field.value.is_number() &&
                    field.value.get_double().get(value) == simdjson::SUCCESS) {
                    parse_kept_counter(field.key, set_kept_);
                    gauge = kept_gauge(kept_, set_kept_);
                }
                if (gauge)
                    *gauge = value;
                else
                    touch(target_of(field.key));
            }
        return true;
    }

    // A change that does not apply: the samples until the next full one cannot be rebuilt.
    bool broken(std::size_t number) {
        const bool had_tree = decoder_.has_tree();
        decoder_.reset();
        if (had_tree || !warned_no_tree_)
            warn(number, problem_ + "; samples skipped until the next full sample");
        warned_no_tree_ = !had_tree;
        return false;
    }

    void emit(const Json& tree, std::size_t number) {
        problems_.clear();
        Snapshot snapshot = snapshot_from_json(tree, problems_);
        for (const auto& p : problems_) warn(number, p);
        visitor_.sample(std::move(snapshot));
        warned_no_tree_ = false;
    }

    // The decoder's whole tree read into kept_, which the next change records update.
    void emit_kept(std::size_t number) {
        problems_.clear();
        kept_ = snapshot_from_json(decoder_.tree(), problems_);
        // A tree with problems is read whole every sample, so each sample warns about all of them as
        // before; a clean one is updated field by field.
        kept_clean_ = problems_.empty();
        hand_out(number);
    }

    // kept_ with the fields the record touched re-read, the same as snapshot_from_json(decoder_.tree()).
    void emit_changed(std::size_t number) {
        if (!kept_clean_ || dirty_everything_) return emit_kept(number);
        problems_.clear();
        for (std::size_t f = 0; f < dirty_field_.size(); ++f) {
            const auto field = static_cast<SnapshotField>(f);
            if (dirty_field_[f]) {
                read_snapshot_field(decoder_.tree(), field, kept_, problems_);
                continue;
            }
            for (const std::size_t index : dirty_elements_[f])
                if (!read_snapshot_element(decoder_.tree(), field, index, kept_, problems_)) {
                    read_snapshot_field(decoder_.tree(), field, kept_, problems_);
                    break;
                }
        }
        kept_clean_ = problems_.empty();
        hand_out(number);
    }

    void hand_out(std::size_t number) {
        for (const auto& p : problems_) warn(number, p);
        visitor_.sample_view(kept_);
        warned_no_tree_ = false;
    }

    const std::string& name_;
    TimelineVisitor& visitor_;
    std::vector<std::string>& warnings_;
    std::size_t warning_count_ = 0;
    bool recognised_ = false;  // a header or a sample was seen: this is a timeline
    bool warned_no_tree_ = false;
    bool changes_ = false;  // a v2 timeline: sample lines are change records (snapshot_diff.h)
    simdjson::dom::parser parser_;
    SnapshotDiffDecoder decoder_;
    std::string problem_;
    std::vector<std::string> add_keys_;  // the pointers of "a", from the last "keys": [0, add_keys_used_)
    std::size_t add_keys_used_ = 0;
    std::vector<Target> add_targets_;    // what each of them touches
    std::vector<KeptCounter> add_kept_;  // where each lands in kept_, when it is a counter placed there
    KeptCounter set_kept_;               // the same for a "set" pointer
    // The last v2 sample as read, and what this record changed in it.
    Snapshot kept_;
    bool kept_clean_ = false;
    bool dirty_everything_ = false;
    std::array<bool, static_cast<std::size_t>(SnapshotField::count)> dirty_field_{};
    std::array<std::vector<std::size_t>, static_cast<std::size_t>(SnapshotField::count)> dirty_elements_;
    std::array<std::vector<char>, static_cast<std::size_t>(SnapshotField::count)> element_seen_;
    std::vector<std::string> problems_;
};

}  // namespace

bool visit_timeline(const std::string& path, TimelineVisitor& visitor, std::vector<std::string>& warnings,
                    std::string& error, const TimelineReadLimits& limits) {
    Reader reader(path, visitor, warnings);
    TimelineInput input(limits, [&](std::size_t line, const std::string& w) { reader.warn(line, w); });
    if (!input.open(path, error)) return false;
    return reader.run(input, error);
}

bool visit_timeline_fd(int fd, const std::string& name, TimelineVisitor& visitor,
                       std::vector<std::string>& warnings, std::string& error,
                       const TimelineReadLimits& limits) {
    Reader reader(name, visitor, warnings);
    TimelineInput input(limits, [&](std::size_t line, const std::string& w) { reader.warn(line, w); });
    if (!input.adopt(fd, name, error)) return false;
    return reader.run(input, error);
}

bool read_timeline(const std::string& path, TimelineContents& out, std::string& error) {
    struct Collect final : TimelineVisitor {
        TimelineContents& c;
        explicit Collect(TimelineContents& contents) : c(contents) {}
        void header(const Json& h) override { c.header = h; }
        void sample(Snapshot&& s) override { c.samples.push_back(std::move(s)); }
        void event(const Json& e) override { c.events.push_back(e); }
        void verdict(const Json& v) override { c.recorded_verdict = v; }
    } collect(out);
    out.path = path;
    return visit_timeline(path, collect, out.warnings, error);
}

}  // namespace stallscope
