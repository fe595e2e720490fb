// The lists a v2 change record's numbers follow (snapshot_diff.h): "keys" for "a", "gkeys" for "g", as the
// reader keeps them from the record that lists them until the next one. Per entry: its pointer, what it
// touches, where it lands in the reader's kept snapshot and its node in the decoder's tree. A new list's
// strings are assigned over the last one's, which allocates nothing once grown (a list changes whenever a
// counter starts or stops moving).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <vector>

#include "libstallscope/timeline/kept_counter.h"
#include "libstallscope/timeline/snapshot_diff.h"
#include "libstallscope/timeline/touched_fields.h"

namespace stallscope {

struct CounterList {
    std::size_t used = 0;               // entries [0, used) are the list
    std::vector<std::string> pointers;  // the pointers of "a"
    std::vector<TouchTarget> targets;   // what each of them touches
    std::vector<KeptCounter> kept;      // where each lands in kept_, when a counter placed there
    std::vector<std::uint64_t> factor;  // a derived entry's factor (0: plain)
    std::vector<std::string> source;    // and its source's pointer
    std::vector<std::int64_t> delta;    // this record's difference of each plain entry
    std::vector<SnapshotDiffDecoder::NodeRef> nodes;  // each one's node in the decoder's tree
    std::vector<Counter*> counter;  // and in the kept snapshot, found in layout counter_layout
    std::vector<std::uint64_t> counter_layout;
    std::vector<std::uint64_t> kept_only;  // == the reader's epoch: added to the kept snapshot alone
    struct Derived {
        std::size_t target, source;  // indices into the list
    };
    std::vector<Derived> derived;

    // The list becomes "keys" `list`; false + problem (and an empty list) when `list` is not one.
    bool read(simdjson::dom::array list, std::string& problem);
    void clear() {
        used = 0;
        targets.clear();
        derived.clear();
    }
};

struct GaugeList {
    std::size_t used = 0;  // entries [0, used) are the list
    std::vector<std::string> pointers;
    std::vector<TouchTarget> targets;
    std::vector<KeptCounter> kept;
    std::vector<SnapshotDiffDecoder::NodeRef> nodes;
    std::vector<char> is_time;  // "/unix_time": lands in the kept snapshot's time
    std::vector<Gauge*> gauge;  // where each other one lands there, found in gauge_layout
    std::vector<std::uint64_t> gauge_layout;
    std::vector<std::uint64_t> kept_only;  // == the reader's epoch: set in the kept snapshot alone

    // Where entry `i` lands in `snapshot` (nullptr: no such gauge there), found once per `layout` of it.
    Gauge* kept_gauge_at(std::size_t i, Snapshot& snapshot, std::uint64_t layout) {
        if (gauge_layout[i] != layout) {
            gauge[i] = kept_gauge(snapshot, kept[i]);
            gauge_layout[i] = layout;
        }
        return gauge[i];
    }
    // The list becomes "gkeys" `list`; false + problem (and an empty list) when `list` is not one.
    bool read(simdjson::dom::array list, std::string& problem);
    void clear() {
        used = 0;
        targets.clear();
    }
};

// The entries of both lists set in the reader's kept snapshot alone (kept_only[i] == epoch), their nodes
// in the decoder's tree left behind (a heap node per number, a cache miss each: 7 % of a dgx-h100 replay)
// until the reader is about to read or reshape the tree. Both hold the same number, so the caught-up tree
// holds what setting it every record would have left.
struct KeptOnly {
    std::uint64_t epoch = 1;   // bumped when the tree may change other than by these entries
    bool tree_behind = false;  // some entry's node does not hold its kept value yet
    bool time_behind = false;  // and "/unix_time" moved in the kept snapshot alone since the last sync
    // Writes each such entry's node from `kept` (its counter, gauge or time), then "/time" from a
    // "/unix_time" that moved (SnapshotDiffDecoder::unix_time_moved).
    void sync(const CounterList& keys, const GaugeList& gauges, const Snapshot& kept,
              SnapshotDiffDecoder& decoder);
};

}  // namespace stallscope
