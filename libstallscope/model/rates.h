// Per-interval deltas of every cumulative counter in two snapshots (the only place that knows about
// counter wrap and reset; see counter_delta.h).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libstallscope/model/counter_delta.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

// A sorted vector of (name, value) with the part of std::map's interface that Rates' readers use (find by
// any string-like key, ordered iteration yielding pair<const-ish string, V>, empty). Flat because the
// profiler rewrites it in place every sample: contiguous rows are updated without a node allocation or a
// pointer chase, and lookups take a std::string_view so callers need not build a key string.
template <class V>
class FlatMap {
  public:
    using value_type = std::pair<std::string, V>;
    using iterator = typename std::vector<value_type>::iterator;
    using const_iterator = typename std::vector<value_type>::const_iterator;

    iterator begin() { return items_.begin(); }
    iterator end() { return items_.end(); }
    const_iterator begin() const { return items_.begin(); }
    const_iterator end() const { return items_.end(); }
    bool empty() const { return items_.empty(); }
    std::size_t size() const { return items_.size(); }
    void clear() { items_.clear(); }

    const_iterator find(std::string_view key) const {
        auto it = lower(key);
        return it != items_.end() && it->first == key ? it : items_.end();
    }
    iterator find(std::string_view key) {
        auto it = lower(key);
        return it != items_.end() && it->first == key ? it : items_.end();
    }
    std::size_t count(std::string_view key) const { return find(key) == end() ? 0 : 1; }
    V& operator[](std::string_view key) {
        auto it = lower(key);
        if (it == items_.end() || it->first != key) it = items_.emplace(it, std::string(key), V{});
        return it->second;
    }
    std::size_t erase(std::string_view key) {
        auto it = find(key);
        if (it == items_.end()) return 0;
        items_.erase(it);
        return 1;
    }

    // For compute_rates' in-place rewrite only: the caller keeps the entries sorted by name and unique.
    std::vector<value_type>& storage() { return items_; }

  private:
    template <class It>
    static It lower_in(It first, It last, std::string_view key) {
        return std::lower_bound(first, last, key, [](const value_type& e, std::string_view k) {
            return std::string_view(e.first) < k;
        });
    }
    iterator lower(std::string_view key) { return lower_in(items_.begin(), items_.end(), key); }
    const_iterator lower(std::string_view key) const { return lower_in(items_.begin(), items_.end(), key); }

    std::vector<value_type> items_;
};

// counter name -> delta, in name order
using DeltaRow = FlatMap<CounterDelta>;
// entity (interface name, "mlx5_0/1", GPU uuid, "host") -> counter name -> delta, in name order
using DeltaTable = FlatMap<DeltaRow>;

// Reused between samples by compute_rates_into so that steady-state updates allocate nothing.
struct RatesScratch {
    std::vector<std::string> prev_keys, cur_keys;
    std::vector<std::size_t> order;
};

struct Rates {
    double interval_seconds = 0;
    DeltaTable host;              // "host" -> oom_kills, psi *_total_us; "job_cgroup" -> its counters
    DeltaTable interfaces;        // net/dev columns and ethtool pause fields
    DeltaTable rdma_counters;     // ports/N/counters
    DeltaTable rdma_hw_counters;  // ports/N/hw_counters
    DeltaTable gpus;              // keyed by uuid (or "gpu<index>"): energy, violations, ECC
    RatesScratch scratch;         // not part of the value: working space of compute_rates_into

    // Convenience for rules: the delta of one counter, nullptr when it was not comparable.
    const CounterDelta* find(const DeltaTable& table, std::string_view entity,
                             std::string_view counter) const;
};

// Compare two samples of the same node. Counters present in only one of them produce no delta
// (missing-then-present is not an event); a value that went down is a reset (no negative rate).
Rates compute_rates(const Snapshot& previous, const Snapshot& current);

// The same into an existing Rates, rewriting its tables in place: when the node's layout (interfaces,
// ports, GPUs, counter names) is unchanged from the last call, nothing is allocated.
void compute_rates_into(Rates& into, const Snapshot& previous, const Snapshot& current);

// Key for a GPU in Rates::gpus and in per-GPU rule state: uuid when known, else "gpu<index>".
std::string gpu_key(const Gpu& gpu);
// The same into `out`, reusing its capacity (no allocation once `out` has held a key this long).
void gpu_key_into(const Gpu& gpu, std::string& out);

}  // namespace stallscope
