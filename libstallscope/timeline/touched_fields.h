// What the change records of one v2 sample touched in the snapshot, in snapshot_from_json's terms: the
// v2 reader re-reads only those fields (or interface / RDMA port / GPU elements) from the decoder's tree
// into the snapshot kept from the previous sample (timeline_reader.cc).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// What one change pointer ("/gpus/3/power_w") touches.
struct TouchTarget {
    static constexpr std::size_t kWhole = static_cast<std::size_t>(-1);
    SnapshotField field = SnapshotField::none;
    bool everything = false;       // "" (the root), or a key we cannot place
    std::size_t element = kWhole;  // interfaces / rdma / gpus index, kWhole for the whole field
};

TouchTarget touch_target(std::string_view pointer);

// Whether re-reading `field` can move counters: the parts of a Snapshot a SnapshotShape speaks of
// (host_stats, interfaces, rdma, gpus, job_cgroup); time, context, events and the rest may change freely.
bool holds_counters(SnapshotField field);

class TouchedFields {
  public:
    static constexpr std::size_t kFields = static_cast<std::size_t>(SnapshotField::count);

    void touch(const TouchTarget& t);
    void clear();
    bool everything() const { return everything_; }
    // Anything touched since clear(): most records of a steady node touch nothing (their numbers go
    // straight into the kept snapshot), and the reader then skips the walk of every field.
    bool any() const { return any_; }
    bool whole(std::size_t field) const { return whole_[field]; }
    // Elements touched in a field not touched whole, each once, in the order first touched.
    const std::vector<std::size_t>& elements(std::size_t field) const { return elements_[field]; }

  private:
    bool any_ = false;
    bool everything_ = false;
    std::array<bool, kFields> whole_{};
    std::array<std::vector<std::size_t>, kFields> elements_;
    std::array<std::vector<char>, kFields> seen_;
};

}  // namespace stallscope
