#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "libstallscope/sources/ethtool/ethtool_ioctl.h"
#include "libstallscope/sources/ethtool/ethtool_parsers.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/util/counter_file.h"
#include "node_test_util.h"

using namespace stallscope;
using namespace node_test;

namespace {

// procfs then ethtool, as the sampler runs them.
Snapshot sample_node(Source& procfs, Source& ethtool) {
    Snapshot snap;
    procfs.sample(snap);
    ethtool.sample(snap);
    return snap;
}

const NetInterface& interface(const Snapshot& snap, const std::string& name) {
    for (const auto& i : snap.interfaces)
        if (i.name == name) return i;
    FAIL("no interface " << name);
    throw 0;  // unreachable: FAIL throws
}

}  // namespace

TEST_CASE("pause, pause-storm and buffer-drop statistics are kept, the rest is not") {
    for (const char* kept : {"rx_pause_ctrl_phy",
                             "tx_pause_ctrl_phy",
                             "rx_prio3_pause",
                             "tx_prio3_pause",
                             "rx_prio3_pause_duration",
                             "tx_prio3_pause_duration",
                             "rx_prio3_pause_transition",
                             "rx_global_pause",
                             "tx_pause_storm_warning_events",
                             "tx_pause_storm_error_events",
                             "rx_discards_phy",
                             "tx_discards_phy",
                             "rx_prio3_discards",
                             "rx_prio3_buf_discard",
                             "rx_prio3_cong_discard",
                             "rx_prio3_marked",
                             "rx_out_of_buffer",
                             "dev_out_of_buffer",
                             "rx_buffer_passed_thres_phy",
                             "outbound_pci_stalled_rd",
                             "outbound_pci_stalled_wr_events",
                             "outbound_pci_buffer_overflow",
                             "link_xoff_rx",
                             "tx_pfc_ena_frames_pri3"})
        CHECK_MESSAGE(is_backpressure_stat(kept), kept);
    for (const char* dropped :
         {"rx_bytes", "rx_packets_phy", "rx_prio3_bytes", "tx_prio3_packets", "rx_corrected_bits_phy",
          "rx_pcs_symbol_err_phy", "link_down_events_phy", "ch0_events", "rx0_packets", "tx0_dropped",
          "rx_queue_0_drops", "module_high_temp"})
        CHECK_FALSE_MESSAGE(is_backpressure_stat(dropped), dropped);
}

TEST_CASE("ethtool -S text of an mlx5 port with PFC on priority 3 gives its pause fields") {
    std::string error;
    const std::string path = node_dir("roce") + "/ethtool/ens1f0np0";
    auto text = read_text_file(path, error);
    REQUIRE(text);
    std::vector<std::string> warnings;
    const CounterMap pause = parse_ethtool_stats_text(*text, path, warnings);
    CHECK(warnings.empty());
    CHECK(pause.size() == 30);
    CHECK(pause.at("rx_prio3_pause") == 123456u);
    CHECK(pause.at("rx_prio3_pause_duration") == 9876543u);
    CHECK(pause.at("rx_prio3_pause_transition") == 61728u);
    CHECK(pause.at("tx_prio3_pause") == 345u);
    CHECK(pause.at("tx_prio3_pause_duration") == 6789u);
    CHECK(pause.at("tx_pause_storm_warning_events") == 14u);
    CHECK(pause.at("tx_pause_storm_error_events") == 1u);
    CHECK(pause.at("rx_discards_phy") == 1500u);
    CHECK(pause.at("rx_out_of_buffer") == 42u);
    CHECK(pause.at("rx_prio3_discards") == 9u);
    CHECK(pause.at("rx_prio0_discards") == 0u);
    CHECK(pause.at("rx_pause_ctrl_phy") == 0u);
    CHECK(pause.count("rx_bytes") == 0);
    CHECK(pause.count("rx_prio3_bytes") == 0);
}

TEST_CASE("garbage in ethtool -S text is null with one warning per bad line") {
    std::vector<std::string> warnings;
    const CounterMap pause = parse_ethtool_stats_text(
        "NIC statistics:\n     rx_pause_ctrl_phy: abc\n     tx_pause_ctrl_phy: 5\n"
        "     garbage line without a colon\n     rx_discards_phy: -1\n     rx_packets: nonsense\n",
        "eth0", warnings);
    CHECK(pause.size() == 3);
    CHECK_FALSE(pause.at("rx_pause_ctrl_phy"));
    CHECK(pause.at("tx_pause_ctrl_phy") == 5u);
    CHECK_FALSE(pause.at("rx_discards_phy"));
    // rx_packets is not kept, so its garbage is not our business.
    REQUIRE(warnings.size() == 3);
    CHECK(warnings[0] == "eth0: rx_pause_ctrl_phy: not a number 'abc'");
    CHECK(warnings[1] == "eth0: not a 'name: value' line 'garbage line without a colon'");
    CHECK(warnings[2] == "eth0: rx_discards_phy: negative value '-1'");
}

TEST_CASE("on a RoCE node the ethtool fields attach to the netdevs procfs found") {
    const Roots roots = fixture_roots("roce");
    REQUIRE_FALSE(roots.ethtool.empty());
    auto procfs = make_procfs_source(roots);
    auto ethtool = make_ethtool_source(roots);
    CHECK(ethtool->name() == "ethtool");
    const Snapshot snap = sample_node(*procfs, *ethtool);
    INFO(all_warnings(snap));
    CHECK(snap.warnings.empty());
    CHECK(interface(snap, "lo").pause.empty());
    CHECK(interface(snap, "eno1np0").pause.empty());  // no ethtool file: no statistics
    const NetInterface& p0 = interface(snap, "ens1f0np0");
    CHECK(p0.pause.size() == 30);
    CHECK(p0.pause.at("tx_pause_storm_error_events") == 1u);
    const NetInterface& p1 = interface(snap, "ens1f1np1");
    CHECK(p1.pause.at("rx_prio3_pause") == 123457u);
    CHECK(p1.pause.at("tx_pause_storm_warning_events") == 0u);
    CHECK(interface(snap, "ens2f0np0").pause.at("rx_prio3_cong_discard") == 6u);
    // procfs data is untouched.
    CHECK(p0.rx_bytes == 9876543210987u);
}

TEST_CASE("a VM NIC with statistics but no pause fields gets an empty pause map") {
    const Roots roots = fixture_roots("vm");
    auto procfs = make_procfs_source(roots);
    auto ethtool = make_ethtool_source(roots);
    const Snapshot snap = sample_node(*procfs, *ethtool);
    CHECK(snap.warnings.empty());
    CHECK(interface(snap, "eth0").pause.empty());
}

TEST_CASE("garbage ethtool values on a fixture node are null with warnings naming the file") {
    const Roots roots = fixture_roots("garbage");
    auto procfs = make_procfs_source(roots);
    auto ethtool = make_ethtool_source(roots);
    Snapshot snap;
    procfs->sample(snap);
    const std::size_t procfs_warnings = snap.warnings.size();
    ethtool->sample(snap);
    CHECK(snap.warnings.size() - procfs_warnings == 3);
    CHECK(count_warnings(snap, {"/ethtool/eth0: rx_pause_ctrl_phy: not a number 'abc'"}) == 1);
    const NetInterface& eth0 = interface(snap, "eth0");
    CHECK_FALSE(eth0.pause.at("rx_pause_ctrl_phy"));
    CHECK(eth0.pause.at("tx_pause_ctrl_phy") == 5u);
}

TEST_CASE("a fixture procfs without an ethtool root asks no real NIC") {
    Roots roots = fixture_roots("dgx-h100");
    REQUIRE(roots.ethtool.empty());
    auto procfs = make_procfs_source(roots);
    auto ethtool = make_ethtool_source(roots);
    const Snapshot snap = sample_node(*procfs, *ethtool);
    CHECK(snap.warnings.empty());
    REQUIRE(snap.interfaces.size() == 10);
    for (const auto& i : snap.interfaces) CHECK_MESSAGE(i.pause.empty(), i.name);
}

TEST_CASE("SIOCETHTOOL on this machine's interfaces answers or says unsupported") {
    // Every interface of the real /proc/net/dev: the ioctl gives a consistent names/values pair, or an
    // answer we treat as "no statistics"; it never fails in another way.
    auto procfs = make_procfs_source(Roots{});
    Snapshot real;
    procfs->sample(real);
    REQUIRE_FALSE(real.interfaces.empty());
    EthtoolSocket socket;
    REQUIRE(socket.ok());
    int answered = 0;
    for (const auto& iface : real.interfaces) {
        CAPTURE(iface.name);
        std::string error;
        std::uint32_t count = 0;
        const auto status = socket.stat_count(iface.name, count, error);
        INFO(error);
        CHECK((status == EthtoolStatus::ok || status == EthtoolStatus::unsupported));
        if (status != EthtoolStatus::ok || count == 0) continue;
        std::vector<std::string> names;
        REQUIRE(socket.stat_names(iface.name, count, names, error) == EthtoolStatus::ok);
        CHECK(names.size() == count);
        for (const auto& n : names) CHECK_FALSE(n.empty());
        std::vector<std::uint64_t> buffer(EthtoolSocket::stats_buffer_slots(count));
        const std::uint64_t* values = nullptr;
        std::uint32_t n_stats = 0;
        REQUIRE(socket.stats(iface.name, count, buffer, values, n_stats, error) == EthtoolStatus::ok);
        CHECK(n_stats == count);
        CHECK(values != nullptr);
        // A stale count is noticed: the kernel either writes its own count (older) or none (newer).
        std::uint32_t stale = 0;
        REQUIRE(socket.stats(iface.name, count - 1, buffer, values, stale, error) == EthtoolStatus::ok);
        CHECK(stale != count - 1);
        ++answered;
    }
    MESSAGE(answered << " of " << real.interfaces.size() << " interfaces have ethtool statistics");
    std::string error;
    std::uint32_t count = 0;
    CHECK(socket.stat_count("stallscope-no-such-if0", count, error) == EthtoolStatus::gone);
}

TEST_CASE("the ethtool source on real interfaces keeps only backpressure fields and never asks lo") {
    auto procfs = make_procfs_source(Roots{});
    auto ethtool = make_ethtool_source(Roots{});
    for (int i = 0; i < 3; ++i) {
        const Snapshot snap = sample_node(*procfs, *ethtool);
        INFO(all_warnings(snap));
        CHECK(count_warnings(snap, {"ethtool "}) == 0);
        for (const auto& iface : snap.interfaces) {
            if (iface.name == "lo") CHECK(iface.pause.empty());
            for (const auto& stat : iface.pause) {
                // Named references, not a structured binding: clang 14 cannot capture one in the macros.
                const auto& name = stat.first;
                const auto& value = stat.second;
                CHECK_MESSAGE(is_backpressure_stat(name), iface.name << " " << name);
                CHECK(value.has_value());
            }
        }
    }
}
