// timeline/moving_fields.h against the model's JSON. The tables are derived from the same description
// (snapshot.h) to_json writes from, so they cannot name a key to_json does not write; these tests check
// that derivation: each entry must name the member to_json writes under its key with the JSON type the
// timeline compares, and every key to_json writes must be either a moving field or listed here as one
// that is not (a field added to the model gets a decision, not a default).
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/timeline/moving_fields.h"
#include "tests/unit/snapshot_fixture.h"

using namespace stallscope;

namespace {

// Each entry's member, set on a default element, shows under the entry's key with the entry's JSON kind
// (a counter an unsigned integer, a gauge a float, a map an object of counters); the keys are all
// written for a default element, which is what the writer's own check asks (snapshot_diff_parts.cc).
template <typename T, std::size_t N>
void check_entries(const std::array<Moving<T>, N>& table, Json (*to_json_one)(const T&)) {
    REQUIRE(N > 0);
    const Json empty = to_json_one(T{});
    for (const Moving<T>& f : table) {
        CAPTURE(f.key);
        CHECK(empty.contains(f.key));
        CHECK(((f.counter != nullptr) + (f.gauge != nullptr) + (f.map != nullptr)) == 1);
        T element{};
        if (f.counter) element.*f.counter = 4'000'000'007u;
        if (f.gauge) element.*f.gauge = 612.25;
        if (f.map) (element.*f.map)["port_xmit_wait"] = 4'000'000'007u;
        const Json json = to_json_one(element);
        REQUIRE(json.contains(f.key));
        const Json& value = json.at(f.key);
        if (f.counter) CHECK((value.is_number_unsigned() && value == 4'000'000'007u));
        if (f.gauge) CHECK((value.is_number_float() && value == 612.25));
        if (f.map) CHECK((value.is_object() && value.value("port_xmit_wait", Json()) == 4'000'000'007u));
    }
}

// Every key to_json writes for `element` (populated) or a default one is in `table` or in `still`.
template <typename T, std::size_t N>
void check_classified(const std::array<Moving<T>, N>& table, Json (*to_json_one)(const T&), const T& element,
                      const std::set<std::string>& still) {
    std::set<std::string> keys;
    for (const Json& json : {to_json_one(element), to_json_one(T{})})
        for (const auto& [key, value] : json.items()) keys.insert(key);
    REQUIRE(keys.size() > N);
    for (const std::string& key : keys) {
        CAPTURE(key);
        const bool moving = find_moving(table, key) != nullptr;
        CHECK(moving != (still.count(key) == 1));  // exactly one of the two
    }
    for (const std::string& key : still) {
        CAPTURE(key);
        CHECK(keys.count(key) == 1);  // a listed key to_json no longer writes
    }
}

}  // namespace

TEST_CASE("each moving field of an interface, RDMA port and GPU is the member to_json writes there") {
    check_entries(kMovingInterface, interface_to_json);
    check_entries(kMovingRdmaPort, rdma_port_to_json);
    check_entries(kMovingGpu, gpu_to_json);
}

TEST_CASE("each moving host and PSI field is the member host_stats_to_json writes there") {
    const auto host_json = [](const HostStats& h) { return host_stats_to_json(h); };
    const auto psi_json = [](const Psi& p) {
        HostStats h;
        h.psi = p;
        return host_stats_to_json(h).at("psi");
    };
    check_entries(kMovingHost, +host_json);
    check_entries(kMovingPsi, +psi_json);
}

// A field added to the model must be put in the moving table (numbers that change from sample to sample:
// the writer then compares them in place) or here (identity, inventory, and parts compared as JSON).
TEST_CASE("every key to_json writes for an element is a moving field or listed as not one") {
    const Snapshot s = stallscope::test::full_snapshot();
    REQUIRE(!s.interfaces.empty());
    REQUIRE(!s.rdma.empty());
    REQUIRE(!s.gpus.empty());
    check_classified(kMovingInterface, interface_to_json, s.interfaces[0], {"name"});
    check_classified(kMovingRdmaPort, rdma_port_to_json, s.rdma[0],
                     {"device", "port", "state", "phys_state", "rate_gbps", "link_layer", "netdev"});
    Gpu gpu = s.gpus[0];  // with every optional part, so their keys are written too
    gpu.gpm.emplace();
    gpu.interconnect.emplace();
    gpu.mig.emplace();
    gpu.processes.emplace();
    // gpm and interconnect move on a GPU that reports them, but are compared as JSON (the element's
    // whole JSON is built when they change): a candidate for the table, not a drift.
    check_classified(kMovingGpu, gpu_to_json, gpu,
                     {"index", "uuid", "pci_bus_id", "name", "vendor", "minor_number", "memory_total_bytes",
                      "max_sm_clock_mhz", "throttle_reasons", "remapped_rows_pending",
                      "remapped_rows_failure", "xid", "gpm", "interconnect", "mig", "processes"});
}
