// visit_timeline: v1 and v2 lines parsed with simdjson's DOM, but for the plain "a"/"g" change records
// most of a v2 timeline is made of (On Demand, plain_record.h) and the binary records that replace them
// in v3 (binary_record.h); snapshots read through snapshot_from_json
// so the reader follows every field the model adds without a change here. A v2 change record re-reads
// only the fields (and interface / RDMA port / GPU elements) its pointers touched (touched_fields.h) into
// the snapshot kept from the previous sample.
#include <simdjson.h>

#include <memory>
#include <utility>

#include "libstallscope/timeline/binary_record.h"
#include "libstallscope/timeline/change_lists.h"
#include "libstallscope/timeline/kept_counter.h"
#include "libstallscope/timeline/kept_sample_check.h"
#include "libstallscope/timeline/plain_record.h"
#include "libstallscope/timeline/simdjson_tree.h"
#include "libstallscope/timeline/timeline.h"
#include "libstallscope/timeline/touched_fields.h"

namespace stallscope {
namespace {

static_assert(TimelineInput::kLinePadding >= simdjson::SIMDJSON_PADDING);

std::string_view string_field(simdjson::dom::object object, const char* key) {
    std::string_view value;
    if (object[key].get_string().get(value) != simdjson::SUCCESS) return {};
    return value;
}

class TimelineFileReader {
  public:
    TimelineFileReader(const std::string& name, TimelineVisitor& visitor, std::vector<std::string>& warnings,
                       bool whole_samples)
        : name_(name), visitor_(visitor), warnings_(warnings), whole_samples_(whole_samples) {
#ifdef STALLSCOPE_INVARIANT_CHECKS  // the whole-sample oracle reads every line beside this reader
        if (!whole_samples)
            shadow_ = std::make_unique<TimelineFileReader>(name, oracle_, oracle_warnings_, true);
#endif
    }

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
            changes_ = changes_ || (input.compressed() && !v1_header_);
            if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
#ifdef STALLSCOPE_INVARIANT_CHECKS
            if (shadow_) {
                shadow_->changes_ = shadow_->changes_ || (input.compressed() && !shadow_->v1_header_);
                shadow_->line(text, terminated, input.line_number());
            }
#endif
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
        if (changes_ && text.front() == kBinaryRecordMarker) return binary_record(text, terminated, number);
        // Most of a v2 timeline: read without the DOM (plain_record.h). Not when reading whole samples,
        // which tests and the fuzz target compare against this path.
        if (changes_ && !whole_samples_ &&
            read_plain_record(plain_parser_, text, TimelineInput::kLinePadding, plain_)) {
            recognised_ = true;
            if (apply_plain(number)) emit_changed(number);
            return true;
        }
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
            const std::string_view schema = string_field(object, "schema");
            if (schema == kTimelineSchemaV2 || schema == kTimelineSchemaV3)
                changes_ = true, v1_header_ = false;
            // A v1 timeline someone compressed: its sample lines are whole samples, not change records.
            if (schema == kTimelineSchema) changes_ = false, v1_header_ = true;
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

    // A binary record (binary_record.h), whether or not samples are read whole: nothing else reads it.
    bool binary_record(std::string_view text, bool terminated, std::size_t number) {
        if (read_binary_record(text, plain_)) {
            recognised_ = true;
            if (apply_plain(number)) emit_changed(number);
            return true;
        }
        if (!recognised_) return false;
        if (!terminated) {
            warn(number, "torn last line skipped (helper killed mid-write?)");
        } else {
            problem_ = "a binary change record that does not read (damaged?)";
            broken(number);
        }
        return false;
    }

    void sample(simdjson::dom::element doc, simdjson::dom::object object, std::size_t number) {
        simdjson::dom::element full;
        // A whole snapshot line (its own "schema") is read as one wherever it is: in a compressed v1
        // file, or pasted into a v2 stream. Never a change record, which has no top-level schema.
        const bool snapshot_line = string_field(object, "schema") == kSnapshotSchema;
        const bool record =
            !snapshot_line &&
            (changes_ || object["full"].error() == simdjson::SUCCESS ||
             object["a"].error() == simdjson::SUCCESS || object["add"].error() == simdjson::SUCCESS ||
             object["g"].error() == simdjson::SUCCESS || object["set"].error() == simdjson::SUCCESS);
        if (!record) {  // v1: the snapshot is the line itself
            emit(to_tree(doc), number);
        } else if (object["full"].get(full) == simdjson::SUCCESS) {
            tree_replaced();  // before its nodes go
            decoder_.keyframe(to_tree(full));
            keys_.clear();
            gauges_.clear();
            emit_kept(number);
        } else if (apply_changes(object, number)) {
            emit_changed(number);
        }
    }

    bool apply_changes(simdjson::dom::object object, std::size_t number) {
        simdjson::dom::object changes;
        simdjson::dom::array list;
        touched_.clear();
        // A record that changes nothing still needs the sample it repeats: after a damaged record
        // (or before the first full sample) there is none, and the kept one is stale (found by the fuzz
        // target: such a record handed out the sample from before the damage).
        if (!decoder_.has_tree()) {
            problem_ = "a change record before any full sample (stream damaged?)";
            return broken(number);
        }
        tree_moves();  // "keys" renews the list, "add" and "set" change the tree
        if (object["keys"].get_array().get(list) == simdjson::SUCCESS && !read_keys(list, number))
            return false;
        if (object["a"].get_array().get(list) == simdjson::SUCCESS && !apply_a(list, number)) return false;
        if (object["add"].get_object().get(changes) == simdjson::SUCCESS)
            for (simdjson::dom::key_value_pair field : changes) {
                std::int64_t delta = 0;
                if (field.value.get_int64().get(delta) != simdjson::SUCCESS) {
                    problem_ = "\"add\" of a non-integer to '" + std::string(field.key) + "'";
                    return broken(number);
                }
                if (!decoder_.add(field.key, delta, problem_)) return broken(number);
                touched_.touch(touch_target(field.key));
            }
        if (object["gkeys"].get_array().get(list) == simdjson::SUCCESS && !read_gauge_keys(list, number))
            return false;
        if (object["g"].get_array().get(list) == simdjson::SUCCESS && !apply_g(list, number)) return false;
        if (object["set"].get_object().get(changes) == simdjson::SUCCESS)
            for (simdjson::dom::key_value_pair field : changes) {
                if (!decoder_.set(field.key, to_tree(field.value), problem_)) return broken(number);
                // A gauge set to a number (a GPU's power or temperature, the host's load or PSI: every
                // second) is placed in the kept snapshot as TimelineFileReader::number reads it; anything
                // else re-reads what it touched.
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
                    touched_.touch(touch_target(field.key));
            }
        tree_moves();           // a "set" may have replaced nodes this record's "a" just found
        decoder_.end_record();  // "/time" from "/unix_time"; kept_ reads the number (unix_time)
        unix_time_written_ = false;
        return true;
    }

    // "keys" (change_lists.h): the list "a" follows until the next one.
    bool read_keys(simdjson::dom::array list, std::size_t number) {
        shape_ = SnapshotShape::fresh();  // its moving counters are this list's
        return keys_.read(list, problem_) || broken(number);
    }

    // A plain record (read_plain_record, read_binary_record): "a" and "g" when there, as apply_changes
    // applies them.
    bool apply_plain(std::size_t number) {
        touched_.clear();
        if (!decoder_.has_tree()) {
            problem_ = "a change record before any full sample (stream damaged?)";
            return broken(number);
        }
        if (plain_.has_a && !apply_a(plain_.a, number)) return false;
        if (plain_.has_g && !apply_g(plain_.g, number)) return false;
        // "/time" follows "/unix_time" where the decoder set it. A plain record changes nothing else
        // end_record() reads; "/unix_time" set in kept_ alone is derived from in sync_tree.
        if (std::exchange(unix_time_written_, false)) decoder_.end_record();
        return true;
    }

    bool apply_a(simdjson::dom::array list, std::size_t number) {
        if (dom_integers(list, plain_.a)) return apply_a(plain_.a, number);
        problem_ = "\"a\" does not match \"keys\"";
        return broken(number);
    }

    // "a": one difference per plain "keys" entry; then each derived entry's, from its source's.
    bool apply_a(const std::vector<std::int64_t>& deltas, std::size_t number) {
        if (keys_.derived.empty()) {  // every entry plain (a node without RDMA ports): one delta each
            if (deltas.size() != keys_.used) {
                problem_ = "\"a\" does not match \"keys\"";
                return broken(number);
            }
            for (std::size_t i = 0; i < deltas.size(); ++i)
                if (!add(i, deltas[i], number)) return false;
            return true;
        }
        std::size_t i = 0;
        for (const std::int64_t delta : deltas) {
            while (i < keys_.used && keys_.factor[i] != 0) ++i;
            if (i >= keys_.used) {
                problem_ = "\"a\" does not match \"keys\"";
                return broken(number);
            }
            keys_.delta[i] = delta;
            if (!add(i, delta, number)) return false;
            ++i;
        }
        while (i < keys_.used && keys_.factor[i] != 0) ++i;
        if (i != keys_.used) {
            problem_ = "\"a\" does not match \"keys\"";
            return broken(number);
        }
        for (const auto& [target, source] : keys_.derived) {
            const std::uint64_t delta =
                keys_.factor[target] * static_cast<std::uint64_t>(keys_.delta[source]);
            if (!add(target, static_cast<std::int64_t>(delta), number)) return false;
        }
        return true;
    }

    // Listed entry `i` moved by `delta` (a listed counter that did not move is a 0: nothing to apply).
    // The common case inline: a counter added to kept_ alone.
    [[gnu::always_inline]] bool add(std::size_t i, std::int64_t delta, std::size_t number) {
        if (delta == 0) return true;
        if (keys_.kept_only[i] == kept_only_.epoch) {  // kept_ alone; its tree node catches up in sync_tree
            **keys_.counter[i] += static_cast<std::uint64_t>(delta);  // wraps as the tree's unsigned add
            kept_only_.tree_behind = true;
            return true;
        }
        return add_through_tree(i, delta, number);
    }
    [[gnu::noinline]] bool add_through_tree(std::size_t i, std::int64_t delta, std::size_t number) {
        if (!decoder_.add(keys_.nodes[i], keys_.pointers[i], delta, problem_)) return broken(number);
        const Json* node = keys_.nodes[i].node;
        // A counter snapshot_from_json would read as this unsigned value: written straight into the kept
        // snapshot, its element not re-read.
        Counter* kept = nullptr;
        if (kept_clean_ && node->is_number_unsigned()) {
            if (keys_.counter_layout[i] != kept_layout_) {  // found once per layout, not per sample
                keys_.counter[i] = kept_counter(kept_, keys_.kept[i]);
                keys_.counter_layout[i] = kept_layout_;
            }
            kept = keys_.counter[i];
        }
        if (kept) {
            *kept = node->get_ref<const Json::number_unsigned_t&>();
            // From now on the same in kept_ alone, until tree_moves(). Never when reading whole samples,
            // the path the fuzz target compares this one with.
            if (!whole_samples_) keys_.kept_only[i] = kept_only_.epoch;
        } else {
            touched_.touch(keys_.targets[i]);
        }
        return true;
    }

    // A counter placed in kept_ is, after the first record that moves it, added to kept_ alone (gauges and
    // the time the same, apply_g): the tree catches up when anything is about to read or reshape it
    // (KeptOnly, change_lists.h): a JSON record, a gauge that is not set in place, fields re-read.
    void sync_tree() {
        kept_only_.sync(keys_, gauges_, kept_, decoder_);
    }
    // Before the tree is read or changed other than by a kept counter's add: it catches up, and every
    // counter goes through the decoder again until a record finds it unsigned and placed in kept_ again.
    void tree_moves() {
        sync_tree();
        ++kept_only_.epoch;
    }
    // The tree is dropped (keyframe, damage): nothing to catch up.
    void tree_replaced() {
        kept_only_.tree_behind = kept_only_.time_behind = false;
        ++kept_only_.epoch;
    }

    bool read_gauge_keys(simdjson::dom::array list, std::size_t number) {
        return gauges_.read(list, problem_) || broken(number);
    }

    bool apply_g(simdjson::dom::array list, std::size_t number) {
        if (dom_numbers(list, plain_.g)) return apply_g(plain_.g, number);
        problem_ = "\"g\" does not match \"gkeys\"";
        return broken(number);
    }

    // "g": every listed number's value; those that changed are set (a gauge straight into kept_). A gauge
    // kept_ holds (a GPU's or the host's, or the time) is, from the record that sets it through the
    // decoder on, set in kept_ alone, as a counter is added there: sync_tree catches its node up, and
    // "/time" with it (the decoder's set, its end_record and the time re-read were 8 % of a vm replay).
    bool apply_g(const std::vector<double>& values, std::size_t number) {
        if (values.size() != gauges_.used) {
            problem_ = "\"g\" does not match \"gkeys\"";
            return broken(number);
        }
        for (std::size_t i = 0; i < values.size(); ++i) {
            const double v = values[i];
            const bool time = gauges_.is_time[i];
            if (gauges_.kept_only[i] == kept_only_.epoch) {
                double& kept = time ? kept_.time : **gauges_.gauge[i];
                if (!same_double(kept, v)) {
                    kept = v;
                    kept_only_.tree_behind = true;
                    kept_only_.time_behind = kept_only_.time_behind || time;
                }
                continue;
            }
            bool changed = false;
            if (!decoder_.sets_in_place(gauges_.nodes[i])) tree_moves();  // it may change a counter's node
            if (!decoder_.set_number(gauges_.nodes[i], gauges_.pointers[i], v, changed, problem_))
                return broken(number);
            unix_time_written_ = unix_time_written_ || time;
            Gauge* gauge = kept_clean_ && !time ? gauges_.kept_gauge_at(i, kept_, kept_layout_) : nullptr;
            if (kept_clean_ && time)
                kept_.time = v;  // what read_time reads from a numeric "/unix_time"
            else if (gauge && changed)
                *gauge = v;
            else if (changed)
                touched_.touch(gauges_.targets[i]);
            // From now on in kept_ alone, until tree_moves(): its node a number set in place, kept_ holding
            // the same. Never when reading whole samples, the path the fuzz target compares this one with.
            if (!whole_samples_ && kept_clean_ && decoder_.sets_in_place(gauges_.nodes[i]) &&
                (time || (gauge && gauge->has_value() && same_double(**gauge, v))))
                gauges_.kept_only[i] = kept_only_.epoch;
        }
        return true;
    }

    // A change that does not apply: the samples until the next full one cannot be rebuilt.
    bool broken(std::size_t number) {
        const bool had_tree = decoder_.has_tree();
        tree_replaced();
        decoder_.reset();
        kept_clean_ = false;  // kept_ is the sample before the damage: the next full one replaces it
        if (had_tree || !warned_no_tree_)
            warn(number, problem_ + "; samples skipped until the next full sample");
        warned_no_tree_ = true;  // one warning per damage: the records after it say nothing new
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
        tree_moves();  // read whole, and kept_'s counters are new
        problems_.clear();
        kept_ = snapshot_from_json(decoder_.tree(), problems_);
        ++kept_layout_;
        shape_ = SnapshotShape::fresh();
        // A tree with problems is read whole every sample, so each sample warns about all of them as
        // before; a clean one is updated field by field.
        kept_clean_ = problems_.empty();
        hand_out(number);
    }

    // kept_ with the fields the record touched re-read, the same as snapshot_from_json(decoder_.tree()).
    void emit_changed(std::size_t number) {
        if (!kept_clean_ || touched_.everything() || whole_samples_) return emit_kept(number);
        problems_.clear();
        for (std::size_t f = 0; touched_.any() && f < TouchedFields::kFields; ++f) {
            if (!touched_.whole(f) && touched_.elements(f).empty()) continue;
            const auto field = static_cast<SnapshotField>(f);
            // Read from the tree, into new elements of kept_: where the counters are, both must be current.
            // Any other field read from a tree that is behind: its "/unix_time" must be current too.
            if (holds_counters(field))
                tree_moves();
            else
                sync_tree();
            if (field == SnapshotField::interfaces || field == SnapshotField::rdma ||
                field == SnapshotField::gpus)
                ++kept_layout_;  // elements re-read: their counter maps are new
            if (holds_counters(field)) shape_ = SnapshotShape::fresh();  // more than values may have changed
            if (touched_.whole(f)) {
                read_snapshot_field(decoder_.tree(), field, kept_, problems_);
                continue;
            }
            for (const std::size_t index : touched_.elements(f))
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
        if (std::exchange(moving_for_, shape_.id) != shape_.id)  // what "keys" names: all "a" can move
            kept_counters(kept_, {keys_.kept.data(), keys_.used}, moving_);
        shape_.moving_known = kept_clean_;
        shape_.moving = moving_;
#ifdef STALLSCOPE_INVARIANT_CHECKS  // the invariant (at kept_), and the oracle's sample of this line
        if (kept_clean_ && !whole_samples_) {
            sync_tree();
            abort_unless_reader_state(decoder_.tree(), kept_, keys_, gauges_, kept_layout_, kept_only_.epoch,
                                      moving_, name_ + ":" + std::to_string(number));
        }
        if (shadow_)
            abort_unless_oracle_sample(oracle_.sample_json, kept_, name_ + ":" + std::to_string(number));
#endif
        visitor_.sample_lent(kept_, shape_);
        warned_no_tree_ = false;
    }

#ifdef STALLSCOPE_INVARIANT_CHECKS
    OracleSample oracle_;
    std::vector<std::string> oracle_warnings_;
    std::unique_ptr<TimelineFileReader> shadow_;  // whole_samples: what every lent sample must equal
#endif
    const std::string& name_;
    TimelineVisitor& visitor_;
    std::vector<std::string>& warnings_;
    std::size_t warning_count_ = 0;
    bool recognised_ = false;  // a header or a sample was seen: this is a timeline
    bool warned_no_tree_ = false;
    bool v1_header_ = false;    // the last header said stallscope.timeline/1
    bool changes_ = false;      // a v2 timeline: sample lines are change records (snapshot_diff.h)
    const bool whole_samples_;  // TimelineReadLimits::whole_samples
    simdjson::dom::parser parser_;
    simdjson::ondemand::parser plain_parser_;
    PlainRecord plain_;  // the plain record's numbers (or the DOM's "a" and "g", collected the same way)
    SnapshotDiffDecoder decoder_;
    std::string problem_;
    CounterList keys_;                // "keys", the list "a" follows
    KeptOnly kept_only_;              // which entries are set in kept_ alone, and whether the tree is behind
    bool unix_time_written_ = false;  // this record set "/unix_time" through the decoder
    GaugeList gauges_;                // "gkeys", the list "g" follows
    KeptCounter set_kept_;            // the same for a "set" pointer
    // The last v2 sample as read, and what this record changed in it. THE INVARIANT (doc/timeline-format.md
    // section 7), whenever a sample is lent from a clean tree: after sync_tree(), kept_ ==
    // snapshot_from_json(decoder_.tree()); an entry stamped kept_layout_ points into kept_ at its own
    // counter (gauge); an entry stamped kept_only_.epoch is such an entry; moving_ is what "keys" names in
    // kept_. Whatever breaks one bumps its counter: the decoder's generation (nodes moved), epoch (the tree
    // changes other than by kept-alone writes), kept_layout_ (elements re-read), shape_ (counters re-read or
    // "keys" renewed; moving_for_ follows it). Checked in builds with invariant checks (check_invariant).
    Snapshot kept_;
    std::uint64_t kept_layout_ = 1;  // bumped whenever kept_'s interfaces, ports or GPUs are re-read
    SnapshotShape shape_;            // renewed whenever anything of kept_ is re-read, not only written to
    std::vector<const Counter*> moving_;  // kept_'s counters named by "keys", found for shape moving_for_
    std::uint64_t moving_for_ = 0;
    bool kept_clean_ = false;
    TouchedFields touched_;
    std::vector<std::string> problems_;
};

}  // namespace

bool visit_timeline(const std::string& path, TimelineVisitor& visitor, std::vector<std::string>& warnings,
                    std::string& error, const TimelineReadLimits& limits) {
    TimelineFileReader reader(path, visitor, warnings, limits.whole_samples);
    TimelineInput input(limits, [&](std::size_t line, const std::string& w) { reader.warn(line, w); });
    if (!input.open(path, error)) return false;
    return reader.run(input, error);
}

bool visit_timeline_fd(int fd, const std::string& name, TimelineVisitor& visitor,
                       std::vector<std::string>& warnings, std::string& error,
                       const TimelineReadLimits& limits) {
    TimelineFileReader reader(name, visitor, warnings, limits.whole_samples);
    TimelineInput input(limits, [&](std::size_t line, const std::string& w) { reader.warn(line, w); });
    if (!input.adopt(fd, name, error)) return false;
    return reader.run(input, error);
}

}  // namespace stallscope
