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
