// stallscope.timeline/2 and /3 sample records: each sample as the difference between its to_json(snapshot)
// tree and the previous sample's. (/3 writes a record that only has "a" and "g" as binary_record.h's
// binary record instead of the JSON below: same numbers, same rules.) Working on the JSON tree (not on
// Snapshot's members) is what lets a field added to model/snapshot.h and snapshot_json.cc flow through the
// timeline without a change here.
//
//   {"type":"sample","full":{<to_json(snapshot)>}}            first sample of a frame (a keyframe)
//   {"type":"sample","keys":["/rdma/0/counters/port_xmit_data",["/rdma/0/tx_bytes",4,"/rdma/0/counters/
//                    port_xmit_data"],...],"a":[123456,...],"gkeys":["/unix_time","/gpus/0/power_w",...],
//                    "g":[1764000001.5,612.25,...],"set":{"/warnings":[...],...}}
// Keys are JSON Pointers (RFC 6901) into the previous tree.
// - "a": signed differences of integer leaves, one per plain pointer of the current "keys" list, in its
//   order. A "keys" entry [pointer, factor, source] is derived: it takes no place in "a", its difference is
//   factor x the difference of `source` (a plain entry of the same list), in unsigned 64-bit arithmetic.
//   The writer lists an RDMA port's rx_bytes / tx_bytes so while they are 4 x port_rcv_data / port_xmit_data
//   (as the infiniband source derives them); a record where that does not hold lists them plain again.
// - "g": the current value of every pointer of the current "gkeys" list (numbers that are not integers:
//   gauges, the time), whole, in its order; a value that did not change is repeated.
// "keys" ("gkeys") is written only when its list changes and holds for the records after it until the next
// one or keyframe. The writer keeps a list stable within a frame (pointer_list.h): the same counters move
// every second, but on a busy node a few start or stop each second, and rewriting the names then cost most
// of the compressed size. A listed integer that did not move is a 0. A record where nothing listed moved
// has no "a" ("g"). A reader also takes "add": {pointer: difference}. Order: "a" (plain, then derived)
// and "add", then "g", then "set".
// "/time" is derived: after a record that changed "/unix_time" (to a number) and did not set "/time" (nor
// ""), a reader whose "/time" is a string makes it format_rfc3339("/unix_time") (the RFC 3339 text, in
// milliseconds, UTC). The writer sets "/time" in such a record whenever its text is not that, so a
// tree that is not to_json's still reads back as written; to_json's never needs it. Records written
// before this rule (November 2026) set "/time" with every "/unix_time", which reads the same.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/timeline/pointer_list.h"

namespace stallscope {

// Whether a change record leaves a number as it is: bit for bit (-0.0 and 0.0 dump differently).
inline bool same_double(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

class SnapshotDiffEncoder {
  public:
    // Appends the record for `tree` (to_json of the sample; no trailing newline) and keeps `tree` as the
    // previous one: a keyframe after construction or reset(), else the changes.
    void append_record(Json&& tree, std::string& out);
    // The same record for `snapshot`, built faster: only the parts (context, host stats, each interface,
    // RDMA port and GPU, ...) that differ from the previous snapshot's are turned into JSON and compared;
    // an unchanged part costs one operator==. Same output as append_record(to_json(snapshot), out).
    void append_record(const Snapshot& snapshot, std::string& out);
    // Plain records (only "a" and "g": no list changed, nothing "set") as binary_record.h's binary record
    // instead of JSON text (stallscope.timeline/3). Off by default: the JSON text is what tests read.
    void set_binary_records(bool on) { binary_records_ = on; }
    bool binary_records() const { return binary_records_; }
    // The next record is a keyframe (a new zstd frame, or a reopened file).
    void reset() {
        have_previous_ = false;
        have_snapshot_ = false;
        keys_.clear();
        gauges_.clear();
    }

  private:
    void begin_changes();
    void end_changes(std::string& out);
    void append_binary(std::string& out);
    void check_derived();
    Json* previous_part(const char* key);
    void diff_part(const char* key, Json&& after);
    void keep_part(const char* key, Json&& after);  // previous_'s part becomes `after`, nothing written
    void diff_element(const char* key, std::size_t index, Json&& after);
    template <typename T>
    bool diff_moving(const char* key, std::size_t index, T& before, const T& after);
    void diff_leaf(Json& node, Json&& now);
    bool diff_counter_leaf(Json& node, const std::string& key, const Counter& value);
    void diff_counters(Json& node, const CounterMap& counters);
    template <typename T, typename F>
    void diff_elements(const char* key, std::vector<T>& before, const std::vector<T>& after, F to_json_one);
    void diff(const Json& before, const Json& after);
    void write_set(const Json& value);
    void write_key(std::string& section, bool& first);
    void write_add(std::int64_t delta);
    void set_replacing(const Json& before, const Json& after);
    void derive_time(const Json& tree);
    void mark_removed();

    Json previous_;
    bool have_previous_ = false;
    bool binary_records_ = false;
    // The snapshot previous_ was made from (append_record(const Snapshot&) only), and where the last
    // previous_part() matched (the parts are visited in the tree's order).
    Snapshot previous_snapshot_;
    bool have_snapshot_ = false;
    std::size_t part_hint_ = 0;
    bool part_missing_ = false;  // previous_ lacked a part (not expected): the whole tree is compared
    // Where the comparison is: object keys (into the trees) and array indices; path() spells it out.
    struct Segment {
        const std::string* key;  // null for an array element
        std::size_t index;
    };
    std::vector<Segment> stack_;
    std::string path_;
    const std::string& path();
    std::string set_;
    bool set_first_ = true;
    // Pointers [0, removed_used_) whose node this record "set": listed pointers under them are dropped.
    std::vector<std::string> removed_;
    std::size_t removed_used_ = 0;
    struct KeySlot {
        std::int64_t delta = 0;    // this record's difference (when moved)
        std::uint64_t factor = 0;  // derived: factor x the difference of `source`; 0 for a plain entry
        std::string source;
    };
    PointerList<KeySlot> keys_;   // "keys" / "a"
    PointerList<double> gauges_;  // "gkeys" / "g": the value last written
};

// Rebuilds each sample's tree from a keyframe and the records that follow it.
class SnapshotDiffDecoder {
  public:
    void keyframe(Json&& tree);
    bool has_tree() const { return have_tree_; }
    const Json& tree() const { return tree_; }
    // A pointer's node, found once and kept by a reader's list entry: good while the decoder's generation
    // is the one it was found in (a keyframe, a reset or a "set" of a container moves nodes).
    struct NodeRef {
        Json* node = nullptr;
        std::uint64_t generation = 0;
    };
    // Apply one change; false + problem when the pointer does not name a node of the right kind.
    // `node`, when given, is set to the changed integer.
    bool add(std::string_view pointer, std::int64_t delta, std::string& problem, const Json** node = nullptr);
    bool add(NodeRef& ref, std::string_view pointer, std::int64_t delta, std::string& problem) {
        // Inline for the common case (a counter found before, still an unsigned number): every listed
        // counter of every record comes here. Unsigned arithmetic wraps like the writer's subtraction.
        if (ref.node && ref.generation == generation_ && ref.node->is_number_unsigned()) {
            ref.node->get_ref<Json::number_unsigned_t&>() += static_cast<std::uint64_t>(delta);
            return true;
        }
        return add_found(ref, pointer, delta, problem);
    }
    bool set(std::string_view pointer, Json&& value, std::string& problem);
    // "g": the node becomes `value` (a number); `changed` when it was not that number already.
    bool set_number(std::string_view pointer, double value, bool& changed, std::string& problem);
    bool set_number(NodeRef& ref, std::string_view pointer, double value, bool& changed,
                    std::string& problem);
    // Whether set_number on `ref` would only write a float in place (no node changes kind or goes away).
    bool sets_in_place(const NodeRef& ref) const {
        return ref.node && ref.generation == generation_ && ref.node->is_number_float();
    }
    // After a record's changes: derives "/time" from "/unix_time" (the rule above).
    void end_record();
    // "/unix_time" was written past the decoder (a reader that kept it elsewhere and catches the tree up
    // later) and moved in some record since the last end_record(): "/time" becomes what the record that
    // moved it last derived, from the value it holds now (no record moved it after that one).
    void unix_time_moved();
    // Forget the tree (a damaged stream): changes are refused until the next keyframe.
    void reset();

  private:
    bool add_found(NodeRef& ref, std::string_view pointer, std::int64_t delta, std::string& problem);
    Json* find(std::string_view pointer, std::string& problem);
    Json* resolve(NodeRef& ref, std::string_view pointer, std::string& problem);
    void moved_nodes() {
        nodes_.clear();
        ++generation_;
    }

    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    Json tree_;
    bool have_tree_ = false;
    // Pointer -> node, for the leaves that move every sample. Nodes of an ordered_json stay where they are
    // until their parent is replaced; any "set" of a container drops the cache.
    std::unordered_map<std::string, Json*, Hash, std::equal_to<>> nodes_;
    std::string key_;               // scratch for an unescaped pointer segment
    std::uint64_t generation_ = 1;  // NodeRefs of another generation are looked up again
    // The "/time" rule: "/unix_time" as the last record (or keyframe) left it, and whether this record
    // set "/time" itself.
    void remember_unix_time();
    void derive_time(bool moved);  // end_record(): moved when it changed since remembered
    Json last_unix_time_;
    bool time_set_ = false;
    NodeRef unix_time_ref_, time_ref_;
    std::string scratch_problem_;
};

// JSON string text of `s` (quotes, escapes), appended.
void append_json_string(std::string& out, std::string_view s);

}  // namespace stallscope
