// parse_kept_counter / kept_counter: the v2 reader's shortcut from an "a" (or GPU gauge "set") pointer to
// the kept Snapshot's member. A pointer it cannot place must say so (the reader then re-reads the element).
#include "libstallscope/timeline/kept_counter.h"

#include <doctest/doctest.h>

#include "tests/unit/snapshot_fixture.h"

using namespace stallscope;

TEST_CASE("the pointers the v2 writer moves every second land on the kept snapshot's counters") {
    Snapshot s = test::full_snapshot();
    REQUIRE_FALSE(s.rdma.empty());
    REQUIRE_FALSE(s.rdma[0].counters.empty());
    REQUIRE_FALSE(s.interfaces.empty());
    REQUIRE_FALSE(s.gpus.empty());
    KeptCounter c;
    const std::string name = s.rdma[0].counters.begin()->first;
    parse_kept_counter("/rdma/0/counters/" + name, c);
    CHECK(kept_counter(s, c) == &s.rdma[0].counters.begin()->second);
    parse_kept_counter("/rdma/0/tx_bytes", c);
    CHECK(kept_counter(s, c) == &s.rdma[0].tx_bytes);
    parse_kept_counter("/interfaces/0/rx_bytes", c);
    CHECK(kept_counter(s, c) == &s.interfaces[0].rx_bytes);
    parse_kept_counter("/gpus/0/energy_mj", c);
    CHECK(kept_counter(s, c) == &s.gpus[0].energy_mj);
    CHECK(kept_gauge(s, c) == nullptr);
    parse_kept_counter("/gpus/0/power_w", c);
    CHECK(kept_gauge(s, c) == &s.gpus[0].power_w);
    CHECK(kept_counter(s, c) == nullptr);
    parse_kept_counter("/host_stats/mem_available_bytes", c);
    CHECK(kept_counter(s, c) == &s.host_stats.mem_available_bytes);
    CHECK(kept_gauge(s, c) == nullptr);
    parse_kept_counter("/host_stats/load1", c);
    CHECK(kept_gauge(s, c) == &s.host_stats.load1);
    CHECK(kept_counter(s, c) == nullptr);
    parse_kept_counter("/host_stats/psi/memory_full_avg10", c);
    CHECK(kept_gauge(s, c) == &s.host_stats.psi.memory_full_avg10);
    parse_kept_counter("/host_stats/psi/io_full_total_us", c);
    CHECK(kept_counter(s, c) == &s.host_stats.psi.io_full_total_us);
}

TEST_CASE("pointers the reader cannot place are refused, not guessed (garbage and other fields)") {
    Snapshot s = test::full_snapshot();
    KeptCounter c;
    for (const char* p : {"",
                          "/",
                          "/rdma",
                          "/rdma/0",
                          "/rdma/x/tx_bytes",
                          "/rdma/-1/tx_bytes",
                          "/rdma/0/state",
                          "/rdma/0/counters/no_such_counter",
                          "/rdma/0/tx_bytes/deeper",
                          "/rdma/99999/tx_bytes",
                          "/gpus/0/index",
                          "/gpus/0/name/x",
                          "/interfaces/0/pause/a~1b",
                          "/unix_time",
                          "/host_stats",
                          "/host_stats/psi",
                          "/host_stats/psi/nope",
                          "/host_stats/load1/x",
                          "/host_stats/psi/io_full_avg10/x",
                          "/host_stats/nope",
                          "/host_stats/load1/",
                          "/host_stats/0/load1",
                          "/rdma/0/counters/a/b",
                          "rdma/0/tx_bytes",
                          "/rdma//tx_bytes"}) {
        CAPTURE(p);
        parse_kept_counter(p, c);
        CHECK(kept_counter(s, c) == nullptr);
        CHECK(kept_gauge(s, c) == nullptr);
    }
}
