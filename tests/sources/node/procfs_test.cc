#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/procfs/kept_open_file.h"
#include "libstallscope/sources/procfs/procfs_parsers.h"
#include "libstallscope/util/counter_file.h"
#include "node_test_util.h"

using namespace stallscope;
using namespace node_test;

namespace {

const NetInterface* find_interface(const Snapshot& snap, const std::string& name) {
    for (const auto& i : snap.interfaces)
        if (i.name == name) return &i;
    return nullptr;
}

std::string fixture_text(const std::string& node, const std::string& rel) {
    std::string error;
    auto text = read_text_file(node_dir(node) + "/" + rel, error);
    REQUIRE_MESSAGE(text, rel << ": " << error);
    return *text;
}

}  // namespace

TEST_CASE("loadavg gives the three load averages") {
    HostStats host;
    Warnings warnings;
    parse_loadavg(fixture_text("dgx-h100", "proc/loadavg"), "loadavg", host, warnings);
    CHECK(warnings.empty());
    CHECK(host.load1 == doctest::Approx(12.41));
    CHECK(host.load5 == doctest::Approx(11.87));
    CHECK(host.load15 == doctest::Approx(10.02));
}

TEST_CASE("meminfo of a 2 TiB node converts kB to bytes") {
    HostStats host;
    Warnings warnings;
    parse_meminfo(fixture_text("dgx-h100", "proc/meminfo"), "meminfo", host, warnings);
    CHECK(warnings.empty());
    CHECK(host.mem_total_bytes == 2113389156ull * 1024);
    CHECK(host.mem_available_bytes == 1923456780ull * 1024);
}

TEST_CASE("meminfo without MemAvailable leaves it null and says so") {
    HostStats host;
    Warnings warnings;
    parse_meminfo("MemTotal:       16365196 kB\nMemFree:        14000000 kB\n", "/p/meminfo", host, warnings);
    CHECK(host.mem_total_bytes == 16365196ull * 1024);
    CHECK_FALSE(host.mem_available_bytes);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] == "/p/meminfo: MemAvailable: missing");
}

TEST_CASE("a meminfo value whose byte count overflows 64 bits is null, not wrapped") {
    HostStats host;
    Warnings warnings;
    parse_meminfo("MemTotal: 18014398509481984 kB\nMemAvailable: 1 kB\n", "meminfo", host, warnings);
    CHECK_FALSE(host.mem_total_bytes);  // 2^54 kB = 2^64 bytes
    CHECK(host.mem_available_bytes == 1024u);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("MemTotal") != std::string::npos);
}

TEST_CASE("stat and vmstat give runnable, blocked and OOM kills") {
    HostStats host;
    Warnings warnings;
    parse_stat(fixture_text("dgx-h100", "proc/stat"), "stat", host, warnings);
    parse_vmstat(fixture_text("dgx-h100", "proc/vmstat"), "vmstat", host, warnings);
    CHECK(warnings.empty());
    CHECK(host.procs_running == 34u);
    CHECK(host.procs_blocked == 2u);
    CHECK(host.oom_kills == 3u);
}

TEST_CASE("vmstat matches oom_kill exactly, not a longer key") {
    HostStats host;
    Warnings warnings;
    parse_vmstat("oom_kill_other 9\noom_kill 4\n", "vmstat", host, warnings);
    CHECK(host.oom_kills == 4u);
    CHECK(warnings.empty());
}

TEST_CASE("pressure files give some/full avg10, avg60 and total stall microseconds") {
    Psi psi;
    Warnings warnings;
    parse_pressure(fixture_text("dgx-h100", "proc/pressure/cpu"), "cpu", PsiResource::cpu, psi, warnings);
    parse_pressure(fixture_text("dgx-h100", "proc/pressure/io"), "io", PsiResource::io, psi, warnings);
    parse_pressure(fixture_text("dgx-h100", "proc/pressure/memory"), "memory", PsiResource::memory, psi,
                   warnings);
    CHECK(warnings.empty());
    CHECK(psi.cpu_some_avg10 == doctest::Approx(1.52));
    CHECK(psi.cpu_some_avg60 == doctest::Approx(1.20));
    CHECK(psi.cpu_some_total_us == 123456789u);
    CHECK(psi.io_some_avg10 == doctest::Approx(0.31));
    CHECK(psi.io_some_avg60 == doctest::Approx(0.25));
    CHECK(psi.io_some_total_us == 2345678u);
    CHECK(psi.io_full_avg10 == doctest::Approx(0.12));
    CHECK(psi.io_full_avg60 == doctest::Approx(0.10));
    CHECK(psi.io_full_total_us == 1234567u);
    CHECK(psi.memory_some_avg10 == doctest::Approx(0.0));
    CHECK(psi.memory_some_total_us == 4567u);
    CHECK(psi.memory_full_total_us == 1234u);
}

TEST_CASE("a cpu pressure file without a full line (kernels < 5.13) is complete") {
    Psi psi;
    Warnings warnings;
    parse_pressure("some avg10=0.10 avg60=0.20 avg300=0.30 total=42\n", "cpu", PsiResource::cpu, psi,
                   warnings);
    CHECK(warnings.empty());
    CHECK(psi.cpu_some_total_us == 42u);
}

TEST_CASE("net/dev keeps every row with all 16 columns, lo included") {
    std::vector<NetInterface> rows;
    Warnings warnings;
    parse_net_dev(fixture_text("dgx-h100", "proc/net/dev"), "net/dev", rows, warnings);
    CHECK(warnings.empty());
    REQUIRE(rows.size() == 10);
    CHECK(rows[0].name == "lo");
    CHECK(rows[1].name == "eno1");
    CHECK(rows[9].name == "ib7");
    const NetInterface& eno1 = rows[1];
    CHECK(eno1.rx_bytes == 56789012345u);
    CHECK(eno1.rx_packets == 45678901u);
    CHECK(eno1.rx_errors == 0u);
    CHECK(eno1.rx_dropped == 12u);
    CHECK(eno1.rx_multicast == 34567u);
    CHECK(eno1.tx_bytes == 23456789012u);
    CHECK(eno1.tx_packets == 34567890u);
    CHECK(eno1.tx_compressed == 0u);
    const NetInterface& ib3 = rows[5];
    CHECK(ib3.name == "ib3");
    CHECK(ib3.rx_bytes == 103017u);
    CHECK(ib3.rx_dropped == 5u);
    CHECK(ib3.rx_multicast == 6u);
    CHECK(ib3.tx_bytes == 92711u);
    CHECK(ib3.tx_packets == 928u);
}

TEST_CASE("net/dev rows with long names and no space after the colon parse") {
    std::vector<NetInterface> rows;
    Warnings warnings;
    parse_net_dev(
        "enp65s0f0np0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
        "  eth0:4294967296 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n",
        "net/dev", rows, warnings);
    CHECK(warnings.empty());
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].name == "enp65s0f0np0");
    CHECK(rows[0].rx_bytes == 1u);
    CHECK(rows[0].rx_compressed == 7u);
    CHECK(rows[0].tx_bytes == 9u);
    CHECK(rows[0].tx_colls == 14u);
    CHECK(rows[0].tx_carrier == 15u);
    CHECK(rows[0].tx_compressed == 16u);
    CHECK(rows[1].name == "eth0");
    CHECK(rows[1].rx_bytes == 4294967296u);
}

TEST_CASE("a kept-open file reads a /proc file longer than one page whole") {
    // /proc/self/maps of a test binary is several pages; seq_file hands it out a page per read.
    KeptOpenFile kept("/proc/self/smaps");
    std::string error;
    auto text = kept.read(error);
    REQUIRE_MESSAGE(text, error);
    CHECK(text->size() > 8192);
    CHECK(text->back() == '\n');
    // Whole, not torn at page boundaries: every mapping entry ends with its VmFlags line. (Comparing with a
    // second read is no test: the process's own mappings change between reads, e.g. under ASan.)
    std::size_t entries = 0, flags = 0;
    std::size_t start = 0;
    while (start < text->size()) {
        const std::size_t end = text->find('\n', start);
        const std::string_view line = std::string_view(*text).substr(start, end - start);
        // A mapping header starts with "<hex>-<hex> "; every other line is "Key:   value".
        const auto dash = line.find('-');
        if (dash != std::string_view::npos && dash > 0 && line.find(':') > dash &&
            line.find_first_not_of("0123456789abcdef") == dash)
            ++entries;
        if (line.rfind("VmFlags:", 0) == 0) ++flags;
        start = end + 1;
    }
    CHECK(entries > 10);
    CHECK(flags == entries);
}

TEST_CASE("a kept-open file sees a shorter rewrite and a removed file") {
    TempDir dir;
    const std::string path = dir.path() + "/net_dev";
    write_file(path, std::string(10000, 'x'));
    KeptOpenFile kept(path);
    std::string error;
    auto first = kept.read(error);
    REQUIRE(first);
    CHECK(first->size() == 10000);
    write_file(path, "short\n");
    auto second = kept.read(error);
    REQUIRE(second);
    CHECK(*second == "short\n");
    KeptOpenFile missing(dir.path() + "/nope");
    CHECK_FALSE(missing.read(error));
    CHECK(error == "No such file or directory");
}

TEST_CASE("garbage /proc values are null, each with one warning naming file and field") {
    auto source = make_procfs_source(fixture_roots("garbage"));
    const Snapshot snap = sample(*source);
    const HostStats& h = snap.host_stats;
    INFO(all_warnings(snap));
    // loadavg "0.52 abc 1.5e999"
    CHECK(h.load1 == doctest::Approx(0.52));
    CHECK_FALSE(h.load5);
    CHECK_FALSE(h.load15);
    CHECK(count_warnings(snap, {"/loadavg: load5: not a number 'abc'"}) == 1);
    CHECK(count_warnings(snap, {"/loadavg: load15: not a number '1.5e999'"}) == 1);
    // meminfo: MemTotal > 2^64-1, no MemAvailable
    CHECK_FALSE(h.mem_total_bytes);
    CHECK_FALSE(h.mem_available_bytes);
    CHECK(count_warnings(snap, {"/meminfo: MemTotal: out of range"}) == 1);
    CHECK(count_warnings(snap, {"/meminfo: MemAvailable: missing"}) == 1);
    // stat: procs_running -3; vmstat: oom_kill binary
    CHECK_FALSE(h.procs_running);
    CHECK(h.procs_blocked == 0u);
    CHECK(count_warnings(snap, {"/stat: procs_running: negative"}) == 1);
    CHECK_FALSE(h.oom_kills);
    CHECK(count_warnings(snap, {"/vmstat: oom_kill: binary data"}) == 1);
    // pressure: cpu empty, io avg10 "x", memory missing
    CHECK_FALSE(h.psi.cpu_some_avg10);
    CHECK_FALSE(h.psi.cpu_some_total_us);
    CHECK(count_warnings(snap, {"/pressure/cpu", "empty file"}) == 1);
    CHECK_FALSE(h.psi.io_some_avg10);
    CHECK(h.psi.io_some_avg60 == doctest::Approx(0.0));
    CHECK(h.psi.io_some_total_us == 12u);
    CHECK(h.psi.io_full_total_us == 7u);
    CHECK(count_warnings(snap, {"/pressure/io: some avg10: not a number 'x'"}) == 1);
    CHECK_FALSE(h.psi.memory_some_avg10);
    CHECK(count_warnings(snap, {"/pressure/memory", "No such file or directory"}) == 1);
    // net/dev: lo fine, eth0 truncated, eth1 "abc" packets, eth2 rx_bytes 2^64
    REQUIRE(snap.interfaces.size() == 4);
    const NetInterface* eth0 = find_interface(snap, "eth0");
    REQUIRE(eth0);
    CHECK(eth0->rx_bytes == 1234u);
    CHECK(eth0->rx_multicast == 0u);
    CHECK_FALSE(eth0->tx_bytes);
    CHECK(count_warnings(snap, {"/net/dev: eth0: truncated row (8 of 16 columns)"}) == 1);
    const NetInterface* eth1 = find_interface(snap, "eth1");
    REQUIRE(eth1);
    CHECK(eth1->rx_bytes == 1234u);
    CHECK_FALSE(eth1->rx_packets);
    CHECK(eth1->tx_bytes == 99u);
    CHECK(count_warnings(snap, {"/net/dev: eth1 rx_packets: not a number 'abc'"}) == 1);
    const NetInterface* eth2 = find_interface(snap, "eth2");
    REQUIRE(eth2);
    CHECK_FALSE(eth2->rx_bytes);
    CHECK(eth2->rx_packets == 1u);
    CHECK(count_warnings(snap, {"/net/dev: eth2 rx_bytes: out of range"}) == 1);
    // Nothing else: exactly one warning per bad input.
    CHECK(snap.warnings.size() == 12);
}

TEST_CASE("the procfs source reads each fixture node end to end") {
    struct Expect {
        const char* node;
        double load1;
        std::uint64_t mem_total_kb, procs_running, oom_kills;
        std::vector<std::string> interfaces;
    };
    const std::vector<Expect> nodes{
        {"dgx-h100",
         12.41,
         2113389156,
         34,
         3,
         {"lo", "eno1", "ib0", "ib1", "ib2", "ib3", "ib4", "ib5", "ib6", "ib7"}},
        {"roce", 3.10, 527988420, 5, 0, {"lo", "eno1np0", "ens1f0np0", "ens1f1np1", "ens2f0np0"}},
        {"vm", 0.08, 16365196, 1, 0, {"lo", "eth0"}},
        {"amd-mi300", 48.20, 2376744212, 97, 0, {"lo", "eno1", "ens10f0np0"}},
    };
    for (const auto& e : nodes) {
        CAPTURE(e.node);
        auto source = make_procfs_source(fixture_roots(e.node));
        CHECK(source->name() == "procfs");
        const Snapshot snap = sample(*source);
        INFO(all_warnings(snap));
        CHECK(snap.warnings.empty());
        CHECK(snap.host_stats.load1 == doctest::Approx(e.load1));
        CHECK(snap.host_stats.mem_total_bytes == e.mem_total_kb * 1024);
        CHECK(snap.host_stats.mem_available_bytes.has_value());
        CHECK(snap.host_stats.procs_running == e.procs_running);
        CHECK(snap.host_stats.oom_kills == e.oom_kills);
        CHECK(snap.host_stats.psi.io_full_total_us.has_value());
        std::vector<std::string> names;
        for (const auto& i : snap.interfaces) names.push_back(i.name);
        CHECK(names == e.interfaces);
        // A second sample from the kept-open fds gives the same data.
        const Snapshot again = sample(*source);
        CHECK(again.interfaces.size() == snap.interfaces.size());
        CHECK(again.host_stats.mem_total_bytes == snap.host_stats.mem_total_bytes);
    }
}

TEST_CASE("a missing /proc file is one warning naming it, per sample") {
    TempDir dir;
    Roots roots = copy_node("vm", dir);
    std::filesystem::remove(roots.procfs + "/vmstat");
    auto source = make_procfs_source(roots);
    const Snapshot snap = sample(*source);
    CHECK_FALSE(snap.host_stats.oom_kills);
    CHECK(snap.host_stats.load1.has_value());
    REQUIRE(snap.warnings.size() == 1);
    CHECK(snap.warnings[0] == roots.procfs + "/vmstat: file: unreadable: No such file or directory");
    // The file comes back (a remount, a fixture update): the next sample reads it.
    write_file(roots.procfs + "/vmstat", "oom_kill 9\n");
    const Snapshot later = sample(*source);
    CHECK(later.warnings.empty());
    CHECK(later.host_stats.oom_kills == 9u);
}

TEST_CASE("the procfs source reads this machine's /proc") {
    auto source = make_procfs_source(Roots{});
    const Snapshot snap = sample(*source);
    INFO(all_warnings(snap));
    CHECK(snap.host_stats.load1.has_value());
    CHECK(snap.host_stats.mem_total_bytes.value_or(0) > 0);
    CHECK(snap.host_stats.procs_running.value_or(0) >= 1);  // this test is running
    CHECK(find_interface(snap, "lo") != nullptr);
    // Only PSI may be absent (kernel without CONFIG_PSI); no other warning.
    for (const auto& w : snap.warnings) CHECK(w.find("/pressure/") != std::string::npos);
}
