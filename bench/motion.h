// Synthetic motion for the benchmarks: traffic at a rate with noise on every interface, RDMA port and
// GPU of a snapshot, and the information that motion carries (its entropy), so a size figure can be put
// next to what no lossless format can beat.
#pragma once

#include <cstdint>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope::bench {

// Traffic at a rate with +-10 % noise: real counters never move by the same amount twice. `bits` adds up
// the information each random choice carries (log2 of its number of distinct outcomes): per sample, that
// is the floor below which no lossless format can store this synthetic motion.
struct Motion {
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;
    double bits = 0;
    std::uint64_t next();                 // xorshift64
    std::uint64_t pick(std::uint64_t n);  // uniform in [0, n)
    double jitter(double around, double spread);
    void grow(Counter& c, double rate);
};

// The next sample of a synthetic step, 1 s later: byte/packet/data counters of every interface and RDMA
// port grow (RDMA rx/tx_bytes derived from the data counters as the source does), GPU utilization, power,
// temperature, SM clock and memory wander, load1 and MemAvailable move.
void step_sample(Snapshot& s, Motion& m);

// A sick node on top of step_sample, so that findings fire every sample as they do on a node that is
// sick all day: CNPs handled on every RDMA port but the last (fabric congestion, senders slowed; not an
// ECN counter: step_sample moves every "packets" counter at line rate), the last port down while its siblings
// carry traffic (a missing rail), GPU 1 in HW thermal slowdown with a row remap pending. Constant faults:
// they add no information beyond the CNP counts.
void make_sick(Snapshot& s, Motion& m);

// For samples read from a fixture tree whose files never change (bench/sample_cost): every netdev and
// RDMA byte/packet/data counter grows by a rate with noise, kept as offsets added to what the files say,
// as a busy node's counters would. No allocation once the offsets are sized.
struct CounterMotion {
    Motion motion;
    std::vector<std::uint64_t> offsets;
    void apply(Snapshot& s);
};

}  // namespace stallscope::bench
