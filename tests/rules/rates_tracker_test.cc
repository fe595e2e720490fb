// RatesTracker keeps only the previous sample's counters; whatever the node's layout does between
// samples, the Rates it gives must be exactly compute_rates(previous, current).
#include "libstallscope/model/rates_tracker.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <span>

#include "libstallscope/model/snapshot_json.h"
#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

// What walking the sample's RDMA maps reads: each port's counters then hw_counters, in order.
std::vector<Counter> rdma_maps(const Snapshot& s) {
    std::vector<Counter> values;
    for (const RdmaPort& p : s.rdma) {
        for (const auto& [name, c] : p.counters) values.push_back(c);
        for (const auto& [name, c] : p.hw_counters) values.push_back(c);
    }
    return values;
}

bool same_values(std::span<const Counter> kept, const std::vector<Counter>& walked) {
    return std::equal(kept.begin(), kept.end(), walked.begin(), walked.end());
}

// The tracker's rates against compute_rates on the whole samples, at every step of the series.
void check_series(const std::vector<Snapshot>& series, RatesTracker& tracker) {
    REQUIRE(series.size() >= 2);  // rates need two samples: fewer would compare nothing
    CHECK(tracker.update(series[0]) == nullptr);
    CHECK(same_values(tracker.rdma_values(), rdma_maps(series[0])));
    for (std::size_t i = 1; i < series.size(); ++i) {
        CAPTURE(i);
        const Rates* r = tracker.update(series[i]);
        CHECK(same_values(tracker.rdma_values(), rdma_maps(series[i])));
        REQUIRE(r != nullptr);
        CHECK(to_json(*r).dump() == to_json(compute_rates(series[i - 1], series[i])).dump());
        CHECK(rule_index_matches_names(*r));
    }
}

}  // namespace

TEST_CASE("A steady node: rates as compute_rates gives them, without rebuilding the layout") {
    std::vector<Snapshot> series;
    for (int i = 0; i < 8; ++i) series.push_back(counting_node(i, 10 + i * i));
    RatesTracker tracker;
    check_series(series, tracker);
    // The first sample has no rates to resolve cells in; the second does; from then on, none.
    CHECK(tracker.rebuilds() == 2);
    CHECK(tracker.previous_time() == 7);
}

TEST_CASE("Interfaces, ports, GPUs, counters and the job cgroup come and go: still compute_rates") {
    std::vector<Snapshot> series;
    for (int i = 0; i < 4; ++i) series.push_back(counting_node(i, 10 + i * i));
    series[2].gpus[0].energy_mj.reset();         // same layout, one counter unreadable: a shorter row
    series[2].interfaces[1].rx_packets.reset();  // and on an interface
    series[2].rdma[1].counters.clear();          // a port's whole row empty
    series[3].rdma[0].hw_counters["out_of_buffer"].reset();  // unreadable this time
    series.push_back(series.back());                         // same time: no deltas at all
    Snapshot gone = counting_node(5, 40);
    gone.interfaces.pop_back();  // eth0 disappears
    gone.rdma.erase(gone.rdma.begin());
    gone.gpus[0].interconnect.reset();
    series.push_back(gone);
    Snapshot back = counting_node(6, 50);
    std::swap(back.interfaces[0], back.interfaces[1]);  // same entities, other order
    back.job_cgroup->path = "/job_2";                   // another cgroup: not compared
    series.push_back(back);
    Snapshot twice = counting_node(7, 60);
    twice.interfaces.push_back(iface("ib0", 1));  // a name listed twice (garbage input)
    series.push_back(twice);
    series.push_back(counting_node(8, 70));
    Snapshot renamed = counting_node(9, 80);
    renamed.rdma[0].hw_counters.erase("np_cnp_sent");
    renamed.rdma[0].hw_counters["np_cnp_sent_x"] = 5;  // same count, another name
    series.push_back(renamed);
    Snapshot earlier = counting_node(8.5, 90);  // the clock went back: no deltas
    series.push_back(earlier);
    series.push_back(counting_node(10, 100));
    Snapshot wrapped = counting_node(11, 100);
    wrapped.host_stats.oom_kills = 0;  // went down: a reset
    series.push_back(wrapped);
    series.push_back(counting_node(12, 120));
    series.push_back(counting_node(13, 130));
    RatesTracker tracker;
    check_series(series, tracker);
}

TEST_CASE("A pause counter named like a net/dev column replaces the column's delta, tracked too") {
    std::vector<Snapshot> series;
    for (int i = 0; i < 4; ++i) {
        Snapshot s = at(i);
        s.interfaces.push_back(iface("ens1", 100 * (i + 1), 0, 0, counters({{"rx_packets", 5u + 3u * i}})));
        if (i == 2) s.interfaces[0].pause["rx_packets"].reset();  // the column's delta stands this time
        series.push_back(s);
    }
    RatesTracker tracker;
    check_series(series, tracker);
}

TEST_CASE("A steady layout is rewritten in place: the same cells every sample") {
    RatesTracker tracker;
    tracker.update(counting_node(0, 10));
    tracker.update(counting_node(1, 20));
    const Rates* r = tracker.update(counting_node(2, 35));
    const CounterDelta* cell = &r->rdma_counters.begin()->second.begin()->second;
    const Rates* again = tracker.update(counting_node(3, 50));
    CHECK(again == r);
    CHECK(&again->rdma_counters.begin()->second.begin()->second == cell);
    CHECK(cell->delta == 1500);
    CHECK(tracker.rebuilds() == 2);
}

// A producer that lends one Snapshot and writes the next sample's values into it (the v2 reader): under a
// steady shape the tracker reads the counters through the pointers it kept, and must still give exactly
// compute_rates; a changed structure comes with a fresh shape, a counter turning null under the same one.
TEST_CASE("A sample lent under one shape is read through kept pointers: still compute_rates") {
    std::vector<Snapshot> series;
    for (int i = 0; i < 10; ++i) series.push_back(counting_node(i, 10 + i * i));
    series[4].rdma[0].hw_counters["out_of_buffer"].reset();  // a value written null: same shape
    series[7].interfaces.pop_back();                         // structure changed: a new shape
    series[8].interfaces.pop_back();
    series[9].interfaces.pop_back();
    Snapshot lent = series[0];
    RatesTracker tracker;
    SnapshotShape shape = SnapshotShape::fresh();
    CHECK(tracker.update(lent, shape) == nullptr);
    for (std::size_t i = 1; i < series.size(); ++i) {
        CAPTURE(i);
        const Counter* before = &lent.rdma[0].counters.begin()->second;
        if (i == 7) shape = SnapshotShape::fresh();
        lent = series[i];  // same sizes: std::vector and FlatMap assign element-wise, in place
        if (i != 7) REQUIRE(&lent.rdma[0].counters.begin()->second == before);
        const Rates* r = tracker.update(lent, shape);
        REQUIRE(r != nullptr);
        CHECK(to_json(*r).dump() == to_json(compute_rates(series[i - 1], series[i])).dump());
        CHECK(same_values(tracker.rdma_values(), rdma_maps(series[i])));
    }
    // Rebuilt: samples 0 and 1 (no rates yet to find cells in), 4 and 5 (the null comes and goes), 7 (the
    // new shape's walk finds an interface missing). Every other one is read through the kept pointers.
    CHECK(tracker.rebuilds() == 5);
    CHECK(tracker.shaped_updates() == 5);  // samples 2, 3, 6, 8, 9
}

TEST_CASE("A shape speaks of one object: another Snapshot under the same id is walked") {
    const Snapshot a0 = counting_node(0, 10), a1 = counting_node(1, 20), a2 = counting_node(2, 40);
    Snapshot b2 = a2;
    b2.rdma[0].counters.begin()->second = 7;  // a different value at a different address
    RatesTracker tracker;
    const SnapshotShape shape = SnapshotShape::fresh();
    tracker.update(a0, shape);
    tracker.update(a1, shape);
    const Rates* r = tracker.update(b2, shape);
    REQUIRE(r != nullptr);
    CHECK(to_json(*r).dump() == to_json(compute_rates(a1, b2)).dump());
    CHECK(tracker.shaped_updates() == 0);
    CHECK(SnapshotShape::fresh().id != SnapshotShape::fresh().id);
}

// The v2 reader also names the counters its records can move (its "keys"): under such a shape the
// tracker reads only those, once the others' cells are zero. Some counters move, the rest stand still,
// one of the moving ones turns null and back, a pause counter named like a column shares a cell.
TEST_CASE("A shape naming the moving counters: only those read, still compute_rates") {
    const auto moving_of = [](Snapshot& s) {
        return std::vector<const Counter*>{&s.interfaces[0].rx_packets, &s.rdma[1].hw_counters["np_cnp_sent"],
                                           &s.gpus[0].energy_mj, &s.gpus[0].memory_used_bytes,
                                           &s.host_stats.oom_kills};
    };
    for (const bool aliased : {false, true}) {
        CAPTURE(aliased);
        std::vector<Snapshot> series{counting_node(0, 10), counting_node(1, 11)};  // all move once
        if (aliased)
            for (Snapshot& s : series) s.interfaces[0].pause["rx_packets"] = 1;  // writes the column's cell
        for (int i = 2; i < 9; ++i) {
            Snapshot s = series.back();
            s.time = i;
            for (const Counter* c : moving_of(s)) {
                Counter& moved = const_cast<Counter&>(*c);
                moved = i == 5 && c == &s.gpus[0].energy_mj ? Counter{} : Counter{10 * i * i + 3u};
            }
            series.push_back(s);
        }
        Snapshot lent = series[0];
        const std::vector<const Counter*> moving = moving_of(lent);
        REQUIRE(!moving.empty());  // else nothing is read through kept pointers
        SnapshotShape shape = SnapshotShape::fresh();
        shape.moving_known = true;
        shape.moving = moving;
        RatesTracker tracker;
        tracker.update(lent, shape);
        for (std::size_t i = 1; i < series.size(); ++i) {
            CAPTURE(i);
            lent = series[i];  // in place: the pointers in `moving` stay good
            const Rates* r = tracker.update(lent, shape);
            REQUIRE(r != nullptr);
            CHECK(to_json(*r).dump() == to_json(compute_rates(series[i - 1], series[i])).dump());
            CHECK(same_values(tracker.rdma_values(), rdma_maps(series[i])));
        }
        // Rebuilt: 0, 1 (no rates yet), 5 (the counter turned null) and 7 (its row needs the cell again,
        // the interval after it came back). 2, 6 and 8 write every cell (the still counters' cells zeroed
        // after a bind); 3 and 4 only the moving ones, unless a cell is shared.
        CHECK(tracker.rebuilds() == 4);
        CHECK(tracker.shaped_updates() == 5);
        CHECK(tracker.moving_only_updates() == (aliased ? 0 : 2));
    }
}
