// stallscope.timeline/2 sample records: each sample as the difference between its to_json(snapshot) tree
// and the previous sample's. Working on the JSON tree (not on Snapshot's members) is what lets a field
// added to model/snapshot.h and snapshot_json.cc flow through the timeline without a change here.
//
//   {"type":"sample","full":{<to_json(snapshot)>}}            first sample of a frame (a keyframe)
//   {"type":"sample","keys":["/rdma/0/counters/port_xmit_data",...],"a":[123456,...],
//                    "set":{"/unix_time":1764000001.5,"/warnings":[...],...}}
// Keys are JSON Pointers (RFC 6901) into the previous tree. "a": signed differences of integer leaves, one
// per pointer of the current "keys" list, in its order. "keys" is written only when that list changes and
// holds for the records after it until the next "keys" or keyframe. The writer keeps the list stable
// within a frame: a pointer already listed whose integer did not move is written as a 0 (the same
// counters move every second, but on a busy node a few start or stop each second; rewriting the names
// then cost most of the compressed size); a pointer that starts moving is appended; a pointer that
// stayed 0 for 64 records, or whose node a "set" replaced, is dropped (the list is then rewritten). A
// record where nothing listed moved has no "a". Adding 0 changes nothing, so readers that add every
// value read this unchanged: still stallscope.timeline/2. A reader also takes "add": {pointer: difference}.
// "a" and "add" apply before "set".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

class SnapshotDiffEncoder {
  public:
    // Appends the record for `tree` (to_json of the sample; no trailing newline) and keeps `tree` as the
    // previous one: a keyframe after construction or reset(), else the changes.
    void append_record(Json&& tree, std::string& out);
    // The same record for `snapshot`, built faster: only the parts (context, host stats, each interface,
    // RDMA port and GPU, ...) that differ from the previous snapshot's are turned into JSON and compared;
    // an unchanged part costs one operator==. Same output as append_record(to_json(snapshot), out).
    void append_record(const Snapshot& snapshot, std::string& out);
    // The next record is a keyframe (a new zstd frame, or a reopened file).
    void reset() {
        have_previous_ = false;
        have_snapshot_ = false;
        list_used_ = 0;
        list_index_.clear();
    }

  private:
    void begin_changes();
    void end_changes(std::string& out);
    Json* previous_part(const char* key);
    void diff_part(const char* key, Json&& after);
    void diff_element(const char* key, std::size_t index, Json&& after);
    template <typename T>
    bool diff_moving(const char* key, std::size_t index, T& before, const T& after);
    void diff_leaf(Json& node, Json&& now);
    void diff_counters(Json& node, const CounterMap& counters);
    template <typename T, typename F>
    void diff_elements(const char* key, std::vector<T>& before, const std::vector<T>& after, F to_json_one);
    void diff(const Json& before, const Json& after);
    void write_set(const Json& value);
    void write_key(std::string& section, bool& first);
    void write_add(std::int64_t delta);
    void set_replacing(const Json& before, const Json& after);
    void update_key_list(bool& rewrite);

    Json previous_;
    bool have_previous_ = false;
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
    // This record's moved integers: pointers [0, moved_used_) and differences (never 0). Strings are
    // assigned over, so no allocation once grown.
    std::vector<std::string> moved_;
    std::vector<std::int64_t> moved_delta_;
    std::size_t moved_used_ = 0;
    // Pointers [0, removed_used_) whose integer or container this record "set": listed pointers under
    // them are dropped.
    std::vector<std::string> removed_;
    std::size_t removed_used_ = 0;
    // The "keys" list last written ([0, list_used_)), each one's difference this record and the records
    // since it last moved; list_index_ finds a pointer that is not where the last one matched.
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::vector<std::string> list_;
    std::vector<std::int64_t> list_delta_;
    std::vector<std::uint32_t> list_idle_;
    std::size_t list_used_ = 0;
    std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> list_index_;
};

// Rebuilds each sample's tree from a keyframe and the records that follow it.
class SnapshotDiffDecoder {
  public:
    void keyframe(Json&& tree);
    bool has_tree() const { return have_tree_; }
    const Json& tree() const { return tree_; }
    // Apply one change; false + problem when the pointer does not name a node of the right kind.
    // `node`, when given, is set to the changed integer.
    bool add(std::string_view pointer, std::int64_t delta, std::string& problem, const Json** node = nullptr);
    bool set(std::string_view pointer, Json&& value, std::string& problem);
    // Forget the tree (a damaged stream): changes are refused until the next keyframe.
    void reset();

  private:
    Json* find(std::string_view pointer, std::string& problem);

    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    Json tree_;
    bool have_tree_ = false;
    // Pointer -> node, for the leaves that move every sample. Nodes of an ordered_json stay where they are
    // until their parent is replaced; any "set" of a container drops the cache.
    std::unordered_map<std::string, Json*, Hash, std::equal_to<>> nodes_;
    std::string key_;  // scratch for an unescaped pointer segment
};

// JSON string text of `s` (quotes, escapes), appended.
void append_json_string(std::string& out, std::string_view s);

}  // namespace stallscope
