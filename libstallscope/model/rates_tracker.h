// Rates from one sample to the next without keeping the previous Snapshot: what the profiler and replay
// use, where compute_rates (rates.h) needs both samples whole.
//
// A Snapshot's counters sit in std::maps and per-entity structs; copying one to keep it as "previous"
// (every map node, every name) cost more than computing the rates. The tracker keeps instead:
//   - a layout: the counter-bearing parts of the last sample whose shape changed (entities, map names),
//     flattened into tokens, so that each new sample is checked against it with one name compare per
//     counter and no allocation;
//   - the previous sample's counter values, a flat vector in layout order;
//   - for every counter, the cell of Rates it writes (resolved once per layout).
// When the shape or the set of comparable counters changes (an interface appears, a counter turns null,
// a name is listed twice, the clock stands still), it falls back to compute_rates_into on a previous
// sample rebuilt from the layout and the kept values: the same code, so the same Rates, by construction.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

class RatesTracker {
  public:
    // Rates between the sample passed to the previous call and `current` (nullptr on the first call),
    // then keeps `current`'s counters for the next. Equal to compute_rates(previous, current).
    // With a shape (snapshot.h) the tracker keeps where each counter sits in `current` and, while later
    // calls pass the same object under the same id, reads the counters from there: no walk of the maps,
    // no name compared; and where the shape names the counters that may move, only those (the ~130 of
    // a dgx-h100's 864 that its traffic moves; the others' cells stay zero).
    const Rates* update(const Snapshot& current, SnapshotShape shape = {});
    const Rates* rates() const { return has_previous_ && had_rates_ ? &rates_ : nullptr; }
    bool has_previous() const { return has_previous_; }
    double previous_time() const { return previous_time_; }  // 0 before the first update
    // The counters of the last sample's RDMA ports, flat: each port's `counters` then `hw_counters`, in
    // port and name order (what walking those maps reads). Valid until the next update.
    std::span<const Counter> rdma_values() const {
        return {previous_.data() + rdma_begin_, rdma_end_ - rdma_begin_};
    }
    // How many updates took the rebuild path (layout or comparable set changed), and how many read the
    // counters through a shape's kept pointers; for tests and benches.
    std::uint64_t rebuilds() const { return rebuilds_; }
    std::uint64_t shaped_updates() const { return shaped_updates_; }
    std::uint64_t moving_only_updates() const { return moving_only_updates_; }  // of those, moving only

    // One structural element of the layout: an entity, a list or map length, a presence flag.
    struct Token {
        std::uint8_t kind;
        std::string_view text;  // into layout_ (or a static name): stable while the layout is
        std::int64_t number;
    };

  private:
    void rebuild(const Snapshot& current, double dt);
    // The steady state's pass: current_ read, every comparable counter's cell written; false (nothing
    // kept) when a counter turned null or back, which changes the rows.
    bool write_cells(double dt);
    bool write_moving_cells(double dt);  // the same for moving_ only; previous_ then written in place
    void bind(const Snapshot& current, SnapshotShape shape);

    Snapshot layout_;  // counter-bearing parts of the sample the layout was taken from
    std::vector<Token> tokens_;
    std::vector<std::string_view> names_;  // per counter: its map name ("" for a struct field)
    std::vector<Counter> previous_, current_;
    std::size_t rdma_begin_ = 0, rdma_end_ = 0;  // the RDMA ports' counters in previous_
    std::vector<CounterDelta*> cells_;  // per counter: its cell in rates_, nullptr when not comparable
    bool unique_keys_ = false;          // no entity listed twice (else compute_rates' rules for twins)
    bool has_previous_ = false, had_rates_ = false;
    double previous_time_ = 0;
    std::uint64_t rebuilds_ = 0, shaped_updates_ = 0, moving_only_updates_ = 0;
    // Under a shape: the sample it was taken from and, per counter, where it sits there (nullptr: a
    // struct's counter that sample does not have, read as null).
    const Snapshot* bound_ = nullptr;
    std::uint64_t bound_shape_ = 0;
    std::vector<const Counter*> sources_;
    // The counters the shape says may move (when moving_only_), in one array the per-sample pass reads
    // in order; the others' cells are zero once one interval under the shape was written whole (settled_).
    struct Moving {
        const Counter* source;
        CounterDelta* cell;
        std::uint32_t k;  // its index in previous_
    };
    std::vector<Moving> moving_;
    bool moving_only_ = false, settled_ = false;
    Rates rates_;
};

}  // namespace stallscope
