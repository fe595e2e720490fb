// Per-interval deltas of every cumulative counter in two snapshots (the only place that knows about
// counter wrap and reset; see counter_delta.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libstallscope/model/counter_delta.h"
#include "libstallscope/model/flat_map.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

// The counters the rules read, by name (sorted: reindex() finds a row's names here by binary search).
// A rule names one as a string literal; CounterName turns it into an index at compile time, and a row
// answers it from an index rebuilt only when its names change: no string compare per sample. A name
// missing here does not compile; add it.
inline constexpr std::string_view kRuleCounterNames[] = {
    "cpu_nr_periods",
    "cpu_nr_throttled",
    "cpu_throttled_usec",
    "dev_out_of_buffer",
    "duplicate_request",
    "ecc_uncorrected",
    "implied_nak_seq_err",
    "link_down_events_phy",
    "link_downed",
    "link_error_recovery",
    "local_ack_timeout_err",
    "memory_oom_kill_events",
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "nvlink_crc_errors",
    "nvlink_recovery_errors",
    "nvlink_replay_errors",
    "oom_kills",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "pcie_replay_count",
    "port_rcv_data",
    "port_rcv_packets",
    "port_xmit_data",
    "port_xmit_packets",
    "req_cqe_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "req_rnr_retries_exceeded",
    "req_transport_retries_exceeded",
    "req_tx_retry_excd",
    "req_tx_retry_excd_err",
    "resp_cqe_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "roce_adp_retrans_to",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "rx_discards_phy",
    "rx_dropped",
    "rx_errors",
    "rx_out_of_buffer",
    "rx_packets",
    "tx_dropped",
    "tx_errors",
    "tx_packets",
    "tx_pause_storm_error_events",
    "tx_pause_storm_warning_events",
    "unicast_rcv_packets",
    "unicast_xmit_packets",
};
inline constexpr std::size_t kRuleCounterCount = std::size(kRuleCounterNames);
static_assert(std::is_sorted(std::begin(kRuleCounterNames), std::end(kRuleCounterNames)));
static_assert(kRuleCounterCount < 256);

struct CounterName {
    std::uint8_t id;
    consteval CounterName(const char* name) : id(index_of(name)) {}
    std::string_view name() const { return kRuleCounterNames[id]; }
    // Every one of them (tests check a row's index against its names with it).
    static constexpr std::array<CounterName, kRuleCounterCount> all() {
        std::array<CounterName, kRuleCounterCount> names{};
        for (std::size_t i = 0; i < kRuleCounterCount; ++i) names[i].id = static_cast<std::uint8_t>(i);
        return names;
    }

  private:
    constexpr CounterName() : id(0) {}
    static consteval std::uint8_t index_of(std::string_view name) {
        for (std::size_t i = 0; i < kRuleCounterCount; ++i)
            if (kRuleCounterNames[i] == name) return static_cast<std::uint8_t>(i);
        throw "not in kRuleCounterNames";  // in a consteval call: a compile error
    }
};

// counter name -> delta, in name order, plus where each of kRuleCounterNames sits in it (cell()).
// Privately a FlatMap so that every change of names goes through this class and marks the index stale.
class DeltaRow : private FlatMap<CounterDelta> {
    using Base = FlatMap<CounterDelta>;

  public:
    using Base::begin;
    using Base::const_iterator;
    using Base::count;
    using Base::empty;
    using Base::end;
    using Base::find;
    using Base::iterator;
    using Base::size;
    using Base::value_type;

    // The delta of a rule's counter, nullptr when the row has none: an array read, no string compare.
    const CounterDelta* cell(CounterName n) const {
        if (dirty_) {  // names changed since the last reindex(): look it up by name
            auto it = Base::find(n.name());
            return it == end() ? nullptr : &it->second;
        }
        const std::int32_t at = known_[n.id];
        return at < 0 ? nullptr : &(begin() + at)->second;
    }
    CounterDelta& operator[](std::string_view key) {
        dirty_ = true;
        return Base::operator[](key);
    }
    std::size_t erase(std::string_view key) {
        dirty_ = true;
        return Base::erase(key);
    }
    void clear() {
        Base::clear();
        dirty_ = true;
    }
    // For compute_rates' in-place rewrite: a caller that changes names through it calls reindex() after
    // (one that only rewrites the deltas of the same names need not).
    using Base::storage;
    void reindex();
    bool dirty() const { return dirty_; }

  private:
    std::array<std::int32_t, kRuleCounterCount> known_{};
    bool dirty_ = true;  // known_ does not describe the names (a new row, or changed through operator[])
};

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
