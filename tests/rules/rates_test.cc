// compute_rates / compute_rates_into: the in-place rewrite the profiler reuses every sample must give
// exactly what a fresh computation gives, whatever the node's layout does between samples.
#include "libstallscope/model/rates.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "libstallscope/model/rates_fields.h"
#include "libstallscope/model/snapshot_json.h"
#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

// What the original map-based code gave, as JSON (iteration order included).
std::string fresh(const Snapshot& a, const Snapshot& b) {
    return to_json(compute_rates(a, b)).dump();
}

}  // namespace

TEST_CASE("Rates reused across samples equal fresh ones while interfaces, ports and GPUs come and go") {
    std::vector<Snapshot> series;
    for (int i = 0; i < 4; ++i) series.push_back(counting_node(i, 10 + i * i));
    series[2].gpus[0].energy_mj.reset();         // same layout, one counter unreadable: a shorter row
    series[2].interfaces[1].rx_packets.reset();  // and on an interface
    series[2].rdma[1].counters.clear();          // a port's whole row empty
    series.push_back(series.back());             // same time: no deltas at all
    Snapshot gone = counting_node(5, 40);
    gone.interfaces.pop_back();  // eth0 disappears
    gone.rdma.erase(gone.rdma.begin());
    gone.gpus[0].energy_mj.reset();  // one counter unreadable this time
    series.push_back(gone);
    Snapshot back = counting_node(6, 50);
    std::swap(back.interfaces[0], back.interfaces[1]);  // same entities, other order
    back.job_cgroup->path = "/job_2";                   // another cgroup: not compared
    series.push_back(back);
    Snapshot twice = counting_node(7, 60);
    twice.interfaces.push_back(iface("ib0", 1));  // a name listed twice (garbage input)
    series.push_back(twice);
    series.push_back(counting_node(8, 70));
    Snapshot renamed = counting_node(9, 80);  // same count of counters, one of them under another name
    renamed.rdma[0].hw_counters.erase("np_cnp_sent");
    renamed.rdma[0].hw_counters["np_ecn_marked_roce_packets"] = 9;
    series.push_back(renamed);
    series.push_back(counting_node(10, 90));
    Snapshot swapped = counting_node(11, 100);  // a row reused for another entity with other counters
    swapped.rdma[1].hw_counters = counters({{"out_of_sequence", 100}, {"rp_cnp_handled", 100}});
    series.push_back(swapped);
    series.push_back(counting_node(12, 110));

    Rates reused;
    std::size_t rows = 0;  // rows the "never empty" check below saw: the tables must not all be empty
    for (std::size_t i = 1; i < series.size(); ++i) {
        CAPTURE(i);
        compute_rates_into(reused, series[i - 1], series[i]);
        CHECK(to_json(reused).dump() == fresh(series[i - 1], series[i]));
        CHECK(rule_index_matches_names(reused));
        for (const DeltaTable* t : {&reused.host, &reused.interfaces, &reused.rdma_counters,
                                    &reused.rdma_hw_counters, &reused.gpus})
            for (const auto& entry : *t) {  // never an empty row (.first: clang 14 cannot capture a binding)
                CHECK_MESSAGE(!entry.second.empty(), entry.first);
                ++rows;
            }
        if (i == 2) {  // the counters unreadable in series[2] have no delta, the others do
            CHECK(reused.rdma_counters.find("mlx5_2/1") == reused.rdma_counters.end());
            CHECK(reused.rdma_hw_counters.find("mlx5_2/1") != reused.rdma_hw_counters.end());
            CHECK_FALSE(reused.find(reused.gpus, "GPU-0", "energy_mj"));
            CHECK(reused.find(reused.gpus, "GPU-0", "ecc_corrected"));
            CHECK_FALSE(reused.find(reused.interfaces, "eth0", "rx_packets"));
            CHECK(reused.find(reused.interfaces, "eth0", "tx_packets"));
        }
        if (i == 3)
            CHECK_FALSE(reused.find(reused.rdma_counters, "mlx5_2/1", "port_rcv_data"));  // prev had none
        if (i == 4) CHECK(reused.rdma_counters.empty());  // same time twice: no deltas
        if (i == 5) CHECK(reused.find(reused.rdma_counters, "mlx5_2/1", "port_rcv_data"));
    }
    CHECK(rows > 0);
}

TEST_CASE("Rows and entities iterate in name order, as the JSON and the rules expect") {
    const Rates r = compute_rates(counting_node(0, 10), counting_node(1, 20));
    std::vector<std::string> ports;
    for (const auto& [key, row] : r.rdma_hw_counters) ports.push_back(key);
    CHECK(ports == std::vector<std::string>{"mlx5_10/1", "mlx5_2/1"});
    std::vector<std::string> names;
    for (const auto& [name, d] : r.interfaces.find("ib0")->second) names.push_back(name);
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::find(names.begin(), names.end(), "rx_prio3_pause") != names.end());
    REQUIRE(r.find(r.gpus, "gpu1", "energy_mj"));
    CHECK(r.find(r.gpus, "gpu1", "energy_mj")->delta == 10'000);
    REQUIRE(r.find(r.host, "job_cgroup", "cpu_nr_periods"));
    CHECK(r.find(r.host, "job_cgroup", "cpu_nr_periods")->per_second == 100);
}

TEST_CASE("A pause counter named like a net/dev column replaces the column's delta, as before") {
    Snapshot a = at(0), b = at(1);
    a.interfaces.push_back(iface("ens1", 100, 0, 0, counters({{"rx_packets", 5}})));
    b.interfaces.push_back(iface("ens1", 200, 0, 0, counters({{"rx_packets", 8}})));
    const Rates r = compute_rates(a, b);
    REQUIRE(r.find(r.interfaces, "ens1", "rx_packets"));
    CHECK(r.find(r.interfaces, "ens1", "rx_packets")->delta == 3);
    CHECK(to_json(r).dump() == fresh(a, b));
}

TEST_CASE("An unchanged layout is rewritten in place: rows keep their storage between samples") {
    Rates r;
    compute_rates_into(r, counting_node(0, 10), counting_node(1, 20));
    const auto* row = &r.rdma_counters.begin()->second;
    const auto* cell = &*row->begin();
    const char* name = row->begin()->first.data();
    compute_rates_into(r, counting_node(1, 20), counting_node(2, 35));
    CHECK(&r.rdma_counters.begin()->second == row);
    CHECK(&*r.rdma_counters.begin()->second.begin() == cell);
    CHECK(r.rdma_counters.begin()->second.begin()->first.data() == name);
    CHECK(cell->second.delta == 1500);
}

TEST_CASE("A rule's counter is found by index, and by name again once a row is edited by hand") {
    Rates r = compute_rates(counting_node(0, 10), counting_node(1, 20));
    DeltaRow& hw = r.rdma_hw_counters.find("mlx5_10/1")->second;
    REQUIRE(hw.cell("np_cnp_sent"));
    CHECK(hw.cell("np_cnp_sent")->delta == 30);
    CHECK(hw.cell("rp_cnp_handled") == nullptr);
    hw["rp_cnp_handled"] = CounterDelta{7, 7, false};  // inserted before np_cnp_sent: positions move
    CHECK(hw.dirty());
    REQUIRE(hw.cell("rp_cnp_handled"));
    CHECK(hw.cell("rp_cnp_handled")->delta == 7);
    CHECK(hw.cell("np_cnp_sent")->delta == 30);
    hw.erase("np_cnp_sent");
    CHECK(hw.cell("np_cnp_sent") == nullptr);
    hw.reindex();
    CHECK_FALSE(hw.dirty());
    CHECK(hw.cell("rp_cnp_handled")->delta == 7);
    CHECK(hw.cell("out_of_buffer")->delta == 10);
    CHECK(hw.cell("np_cnp_sent") == nullptr);
}

namespace {

template <class Fields>
std::vector<std::string> names_of(const Fields& fields) {
    std::vector<std::string> names;
    for (const auto& f : fields) names.emplace_back(f.name);
    return names;
}

}  // namespace

// The rated counters come from the flags of each struct's description (snapshot.h): a flag lost or added
// there changes which rows Rates carries. These are the lists that were written by hand before.
TEST_CASE("the counters each struct's description flags as rates are the rows Rates carries, by name") {
    using namespace rates_fields;
    CHECK(names_of(gpu_fields()) ==
          std::vector<std::string>{"ecc_corrected", "ecc_uncorrected", "energy_mj", "nvlink_crc_errors",
                                   "nvlink_recovery_errors", "nvlink_replay_errors", "nvlink_rx_bytes",
                                   "nvlink_tx_bytes", "pcie_replay_count", "pcie_rx_bytes", "pcie_tx_bytes",
                                   "violation_power_ns", "violation_thermal_ns"});
    CHECK(names_of(host_fields()) == std::vector<std::string>{"oom_kills", "psi_cpu_some_total_us",
                                                              "psi_io_full_total_us", "psi_io_some_total_us",
                                                              "psi_memory_full_total_us",
                                                              "psi_memory_some_total_us"});
    CHECK(names_of(cgroup_fields()) ==
          std::vector<std::string>{"cpu_nr_periods", "cpu_nr_throttled", "cpu_throttled_usec",
                                   "cpu_usage_usec", "memory_oom_events", "memory_oom_kill_events",
                                   "psi_cpu_some_total_us", "psi_io_full_total_us",
                                   "psi_memory_full_total_us"});
    CHECK(names_of(interface_fields()) ==
          std::vector<std::string>{"rx_bytes", "rx_compressed", "rx_dropped", "rx_errors", "rx_fifo",
                                   "rx_frame", "rx_multicast", "rx_packets", "tx_bytes", "tx_carrier",
                                   "tx_colls", "tx_compressed", "tx_dropped", "tx_errors", "tx_fifo",
                                   "tx_packets"});
    // A part's counters are read through it, and are absent (null) where the part is.
    Gpu g;
    const auto& energy = *std::find_if(gpu_fields().begin(), gpu_fields().end(),
                                       [](const auto& f) { return f.name == "energy_mj"; });
    const auto& nvlink = *std::find_if(gpu_fields().begin(), gpu_fields().end(),
                                       [](const auto& f) { return f.name == "nvlink_tx_bytes"; });
    CHECK(energy.get(g) == &g.energy_mj);
    CHECK(nvlink.get(g) == nullptr);
    g.interconnect.emplace();
    CHECK(nvlink.get(g) == &g.interconnect->nvlink_tx_bytes);
}
