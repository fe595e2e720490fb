#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/infiniband/infiniband_parsers.h"
#include "libstallscope/sources/infiniband/infiniband_source.h"
#include "node_test_util.h"

using namespace stallscope;
using namespace node_test;
namespace fs = std::filesystem;

namespace {

const RdmaPort* find_port(const Snapshot& snap, const std::string& device, int port = 1) {
    for (const auto& p : snap.rdma)
        if (p.device == device && p.port == port) return &p;
    return nullptr;
}

Counter counter(const CounterMap& map, const std::string& name) {
    auto it = map.find(name);
    REQUIRE_MESSAGE(it != map.end(), name << " not in the map");
    return it->second;
}

}  // namespace

TEST_CASE("port state text loses its numeric prefix") {
    CHECK(parse_port_state("4: ACTIVE\n") == "ACTIVE");
    CHECK(parse_port_state("5: LinkUp\n") == "LinkUp");
    CHECK(parse_port_state("2: Polling") == "Polling");
    CHECK(parse_port_state("ACTIVE\n") == "ACTIVE");
    CHECK_FALSE(parse_port_state(""));
    CHECK_FALSE(parse_port_state("4: \n"));
    CHECK_FALSE(parse_port_state(std::string("4: ACT\0IVE", 10)));
}

TEST_CASE("port rate text becomes Gb/s") {
    CHECK(parse_rate_gbps("400 Gb/sec (4X NDR)\n") == doctest::Approx(400));
    CHECK(parse_rate_gbps("2.5 Gb/sec (1X SDR)\n") == doctest::Approx(2.5));
    CHECK(parse_rate_gbps("200 Gb/sec (4X HDR)") == doctest::Approx(200));
    CHECK_FALSE(parse_rate_gbps("fast\n"));
    CHECK_FALSE(parse_rate_gbps("100 Mb/sec"));
    CHECK_FALSE(parse_rate_gbps(""));
    CHECK_FALSE(parse_rate_gbps("-5 Gb/sec"));
}

TEST_CASE("PMA data words become bytes, null stays null") {
    CHECK(data_words_to_bytes(Counter{10}) == 40u);
    CHECK_FALSE(data_words_to_bytes(std::nullopt));
    CHECK_FALSE(data_words_to_bytes(Counter{1ull << 62}));  // * 4 = 2^64
    CHECK(data_words_to_bytes(Counter{(1ull << 62) - 1}) == 0xFFFFFFFFFFFFFFFCull);
    CHECK(is_no_pma("N/A (no PMA)\n"));
    CHECK_FALSE(is_no_pma("0\n"));
}

TEST_CASE("a DGX H100 reports eight active NDR ports with every counter file") {
    auto source = make_infiniband_source(fixture_roots("dgx-h100"));
    CHECK(source->name() == "infiniband");
    const Snapshot snap = sample(*source);
    INFO(all_warnings(snap));
    CHECK(snap.warnings.empty());
    REQUIRE(snap.rdma.size() == 8);
    for (int i = 0; i < 8; ++i) {
        const RdmaPort& p = snap.rdma[static_cast<std::size_t>(i)];
        CAPTURE(i);
        CHECK(p.device == "mlx5_" + std::to_string(i));
        CHECK(p.port == 1);
        CHECK(p.key() == "mlx5_" + std::to_string(i) + "/1");
        CHECK(p.state == "ACTIVE");
        CHECK(p.phys_state == "LinkUp");
        CHECK(p.rate_gbps == doctest::Approx(400));
        CHECK(p.link_layer == "InfiniBand");
        CHECK(p.netdev == "ib" + std::to_string(i));  // IPoIB, from device/net
        CHECK(p.counters.size() == 21);
        CHECK(p.hw_counters.size() == 25);
        // .first/.second, not structured bindings: clang 14 cannot capture those in CHECK_MESSAGE
        for (const auto& counter : p.counters) CHECK_MESSAGE(counter.second.has_value(), counter.first);
        for (const auto& counter : p.hw_counters) CHECK_MESSAGE(counter.second.has_value(), counter.first);
    }
    const RdmaPort& first = snap.rdma[0];
    CHECK(counter(first.counters, "port_rcv_data") == 123456789012u);
    CHECK(first.rx_bytes == 123456789012u * 4);
    CHECK(first.tx_bytes == 98765432109u * 4);
    CHECK(counter(first.counters, "port_xmit_wait") == 2345678901u);
    CHECK(counter(first.counters, "link_downed") == 1u);
    CHECK(counter(first.counters, "VL15_dropped") == 0u);
    CHECK(counter(first.hw_counters, "lifespan") == 12u);
    const RdmaPort& last = snap.rdma[7];
    CHECK(last.rx_bytes == (123456789012u + 7 * 1000003u) * 4);
    CHECK(counter(last.counters, "port_rcv_errors") == 7u);
    CHECK(counter(snap.rdma[3].hw_counters, "out_of_sequence") == 17u + 3 * 101u);
    // Congestion control counters exist only on Ethernet link layers.
    CHECK(first.hw_counters.count("np_cnp_sent") == 0);
}

TEST_CASE("a RoCE port reports its netdev and hw_counters") {
    auto source = make_infiniband_source(fixture_roots("roce"));
    const Snapshot snap = sample(*source);
    INFO(all_warnings(snap));
    CHECK(snap.warnings.empty());
    REQUIRE(snap.rdma.size() == 3);
    const RdmaPort* p0 = find_port(snap, "mlx5_0");
    const RdmaPort* p1 = find_port(snap, "mlx5_1");
    const RdmaPort* p2 = find_port(snap, "mlx5_2");
    REQUIRE((p0 && p1 && p2));
    CHECK(p0->link_layer == "Ethernet");
    CHECK(p0->netdev == "ens1f0np0");  // gid_attrs/ndevs/0
    CHECK(p1->netdev == "ens1f1np1");  // only device/net
    CHECK(p2->netdev == "ens2f0np0");
    CHECK(p0->rate_gbps == doctest::Approx(200));
    CHECK(p0->hw_counters.size() == 31);
    CHECK(p0->counters.size() == 20);
    CHECK(counter(p0->hw_counters, "np_cnp_sent") == 456789u);
    CHECK(counter(p0->hw_counters, "np_ecn_marked_roce_packets") == 567890u);
    CHECK(counter(p1->hw_counters, "rp_cnp_handled") == 345678u + 101u);
    CHECK(counter(p0->hw_counters, "rp_cnp_ignored") == 0u);
    CHECK(counter(p0->hw_counters, "req_tx_retry_excd") == 0u);
    CHECK(counter(p1->hw_counters, "packet_seq_err") == 3u + 101u);
    CHECK(counter(p0->hw_counters, "local_ack_timeout_err") == 2u);
    CHECK(p0->rx_bytes == 123456789012u * 4);
    // A port that is down still reports, with its state.
    CHECK(p2->state == "DOWN");
    CHECK(p2->phys_state == "Disabled");
    CHECK(p2->rate_gbps == doctest::Approx(25));
}

TEST_CASE("a node without RDMA reports no ports and no warning") {
    auto source = make_infiniband_source(fixture_roots("vm"));
    const Snapshot snap = sample(*source);
    CHECK(snap.rdma.empty());
    CHECK(snap.warnings.empty());
}

TEST_CASE("garbage counter files are null, each named in a warning; unsupported ones only once") {
    auto source = make_infiniband_source(fixture_roots("garbage"));
    const Snapshot snap = sample(*source);
    INFO(all_warnings(snap));
    REQUIRE(snap.rdma.size() == 1);  // mlx5_1 has no ports directory
    const RdmaPort& p = snap.rdma[0];
    CHECK(p.state == "ACTIVE");
    CHECK_FALSE(p.rate_gbps);
    CHECK(count_warnings(snap, {"mlx5_0/ports/1/rate: not a rate 'fast'"}) == 1);
    CHECK_FALSE(counter(p.counters, "port_rcv_data"));
    CHECK(count_warnings(snap, {"/counters/port_rcv_data: empty"}) == 1);
    CHECK_FALSE(counter(p.counters, "port_xmit_data"));
    CHECK(count_warnings(snap, {"/counters/port_xmit_data: N/A (no PMA)"}) == 1);
    CHECK_FALSE(counter(p.counters, "symbol_error"));
    CHECK(count_warnings(snap, {"/counters/symbol_error: negative"}) == 1);
    CHECK_FALSE(counter(p.counters, "link_downed"));
    CHECK(count_warnings(snap, {"/counters/link_downed: out of range"}) == 1);
    CHECK_FALSE(counter(p.counters, "VL15_dropped"));
    CHECK(count_warnings(snap, {"/counters/VL15_dropped: not a number '12abc'"}) == 1);
    CHECK_FALSE(counter(p.counters, "port_rcv_errors"));
    CHECK(count_warnings(snap, {"/counters/port_rcv_errors: binary data"}) == 1);
    CHECK_FALSE(counter(p.counters, "port_xmit_wait"));  // a directory
    CHECK(count_warnings(snap, {"/counters/port_xmit_wait: unreadable (Is a directory); not re-read"}) == 1);
    CHECK_FALSE(counter(p.counters, "port_rcv_packets"));  // dangling symlink
    CHECK(count_warnings(snap, {"/counters/port_rcv_packets: unreadable: No such file or directory"}) == 1);
    CHECK(counter(p.counters, "port_xmit_packets") == 12345u);
    CHECK(counter(p.hw_counters, "out_of_sequence") == 7u);
    CHECK(counter(p.hw_counters, "lifespan") == 12u);
    CHECK_FALSE(counter(p.hw_counters, "np_cnp_sent"));  // hex is not a sysfs counter
    CHECK(count_warnings(snap, {"/hw_counters/np_cnp_sent: not a number '0x1f'"}) == 1);
    CHECK_FALSE(p.rx_bytes);  // port_rcv_data is null
    CHECK_FALSE(p.tx_bytes);
    CHECK(count_warnings(snap, {"mlx5_1/ports: unreadable; device skipped"}) == 1);
    CHECK(snap.warnings.size() == 11);

    // Later samples: still null; the N/A, directory and missing-ports warnings are not repeated, the
    // others are (the value may change), including across the re-listing a failed read triggers.
    for (int i = 2; i <= 15; ++i) {
        CAPTURE(i);
        const Snapshot later = sample(*source);
        REQUIRE(later.rdma.size() == 1);
        CHECK_FALSE(counter(later.rdma[0].counters, "port_xmit_data"));
        CHECK_FALSE(counter(later.rdma[0].counters, "port_xmit_wait"));
        CHECK(later.warnings.size() == 8);
        CHECK(count_warnings(later, {"N/A (no PMA)"}) == 0);
        CHECK(count_warnings(later, {"port_xmit_wait"}) == 0);
    }
}

TEST_CASE("a counter that failed as unsupported is not read again") {
    TempDir dir;
    const Roots roots = copy_node("garbage", dir);
    auto source = make_infiniband_source(roots);
    sample(*source);
    // The directory becomes a valid file: a source that re-read it would now report 5.
    const std::string path = roots.sysfs + "/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait";
    fs::remove_all(path);
    write_file(path, "5\n");
    const Snapshot snap = sample(*source);
    REQUIRE(snap.rdma.size() == 1);
    CHECK_FALSE(counter(snap.rdma[0].counters, "port_xmit_wait"));
}

TEST_CASE("an unreadable counter file is null with a warning (as root it is simply read)") {
    TempDir dir;
    const Roots roots = copy_node("roce", dir);
    const std::string path = roots.sysfs + "/class/infiniband/mlx5_0/ports/1/counters/symbol_error";
    REQUIRE(::chmod(path.c_str(), 0) == 0);
    auto source = make_infiniband_source(roots);
    const Snapshot first = sample(*source);
    const Snapshot second = sample(*source);
    const RdmaPort* p = find_port(first, "mlx5_0");
    REQUIRE(p);
    if (::geteuid() == 0) {
        // CAP_DAC_OVERRIDE ignores mode 000; the mechanism is covered by the directory and symlink cases.
        CHECK(counter(p->counters, "symbol_error") == 0u);
        CHECK(first.warnings.empty());
    } else {
        CHECK_FALSE(counter(p->counters, "symbol_error"));
        CHECK(count_warnings(first, {"counters/symbol_error: unreadable (Permission denied); not re-read"}) ==
              1);
        CHECK(second.warnings.empty());  // EACCES is remembered, warned once
    }
}

namespace {

// Adds class/infiniband/<name> as a copy of roce's mlx5_2 device tree under a new PCI address.
void plug_device(const Roots& roots, const std::string& name, const std::string& pci) {
    const std::string devices = roots.sysfs + "/devices/pci0000:00";
    fs::copy(devices + "/0000:af:00.0", devices + "/" + pci,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    fs::rename(devices + "/" + pci + "/infiniband/mlx5_2", devices + "/" + pci + "/infiniband/" + name);
    fs::create_symlink("../../devices/pci0000:00/" + pci + "/infiniband/" + name,
                       roots.sysfs + "/class/infiniband/" + name);
}

}  // namespace

TEST_CASE("a hot-plugged HCA appears and a removed one disappears within the re-listing period") {
    TempDir dir;
    const Roots roots = copy_node("roce", dir);
    InfinibandOptions options;
    options.rediscover_every = 3;
    options.rediscover_min_seconds = 0;  // samples here are microseconds apart
    auto source = make_infiniband_source(roots, options);
    CHECK(sample(*source).rdma.size() == 3);  // sample 1 lists
    plug_device(roots, "mlx5_3", "0000:b0:00.0");
    CHECK(sample(*source).rdma.size() == 3);  // samples 2 and 3 use the listing
    CHECK(sample(*source).rdma.size() == 3);
    const Snapshot listed = sample(*source);  // sample 4 lists again
    CHECK(listed.rdma.size() == 4);
    CHECK(find_port(listed, "mlx5_3") != nullptr);
    CHECK(listed.warnings.empty());
    fs::remove(roots.sysfs + "/class/infiniband/mlx5_1");
    fs::remove_all(roots.sysfs + "/devices/pci0000:00/0000:3b:00.1");
    std::size_t ports = 4;
    for (int i = 0; i < 3 && ports == 4; ++i) ports = sample(*source).rdma.size();
    CHECK(ports == 3);
    const Snapshot after = sample(*source);
    INFO(all_warnings(after));
    CHECK(find_port(after, "mlx5_1") == nullptr);
    CHECK(after.warnings.empty());
}

TEST_CASE("at a fast cadence the re-listing also waits rediscover_min_seconds") {
    TempDir dir;
    const Roots roots = copy_node("roce", dir);
    InfinibandOptions options;
    options.rediscover_every = 1;
    options.rediscover_min_seconds = 1.0;
    auto source = make_infiniband_source(roots, options);
    CHECK(sample(*source).rdma.size() == 3);
    plug_device(roots, "mlx5_3", "0000:b0:00.0");
    for (int i = 0; i < 20; ++i) REQUIRE(sample(*source).rdma.size() == 3);  // due by count, not by time
    std::this_thread::sleep_for(std::chrono::milliseconds(1050));
    CHECK(sample(*source).rdma.size() == 4);
}

TEST_CASE("a failed counter read makes the next sample list devices again") {
    TempDir dir;
    const Roots roots = copy_node("roce", dir);
    // A counter that cannot be read (dangling symlink): each sample warns about it.
    fs::create_symlink("/nonexistent/stallscope",
                       roots.sysfs + "/class/infiniband/mlx5_0/ports/1/counters/zz_gone");
    InfinibandOptions options;
    options.rediscover_every = 1000;
    options.rediscover_after_failure_gap = 1;
    auto source = make_infiniband_source(roots, options);
    const Snapshot first = sample(*source);
    CHECK(first.rdma.size() == 3);
    CHECK(count_warnings(first, {"zz_gone: unreadable: No such file or directory"}) == 1);
    plug_device(roots, "mlx5_3", "0000:b0:00.0");
    CHECK(sample(*source).rdma.size() == 4);  // listed again because of the failure, not the period
}

TEST_CASE("on a dual-port device each port gets the netdev whose dev_port matches") {
    TempDir dir;
    const std::string dev = dir.path() + "/sys/class/infiniband/mlx4_0";
    for (int port : {1, 2}) {
        const std::string p = dev + "/ports/" + std::to_string(port);
        write_file(p + "/state", "4: ACTIVE\n");
        write_file(p + "/phys_state", "5: LinkUp\n");
        write_file(p + "/rate", "40 Gb/sec (4X QDR)\n");
        write_file(p + "/link_layer", "Ethernet\n");
        write_file(p + "/counters/port_rcv_data", std::to_string(port * 100) + "\n");
    }
    write_file(dev + "/device/net/eth0/dev_port", "0\n");
    write_file(dev + "/device/net/eth1/dev_port", "1\n");
    Roots roots;
    roots.procfs = dir.path() + "/proc";
    roots.sysfs = dir.path() + "/sys";
    auto source = make_infiniband_source(roots);
    const Snapshot snap = sample(*source);
    CHECK(snap.warnings.empty());
    REQUIRE(snap.rdma.size() == 2);
    CHECK(snap.rdma[0].netdev == "eth0");
    CHECK(snap.rdma[1].netdev == "eth1");
    CHECK(snap.rdma[1].rx_bytes == 800u);
    CHECK(snap.rdma[0].hw_counters.empty());
}

TEST_CASE("devices are listed in natural order") {
    TempDir dir;
    for (const char* name : {"mlx5_10", "mlx5_2", "mlx5_1"}) {
        const std::string p = dir.path() + "/sys/class/infiniband/" + name + "/ports/1";
        write_file(p + "/state", "4: ACTIVE\n");
        write_file(p + "/phys_state", "5: LinkUp\n");
        write_file(p + "/rate", "400 Gb/sec (4X NDR)\n");
        write_file(p + "/link_layer", "InfiniBand\n");
    }
    Roots roots;
    roots.procfs = dir.path() + "/proc";
    roots.sysfs = dir.path() + "/sys";
    const Snapshot snap = sample(*make_infiniband_source(roots));
    REQUIRE(snap.rdma.size() == 3);
    CHECK(snap.rdma[0].device == "mlx5_1");
    CHECK(snap.rdma[1].device == "mlx5_2");
    CHECK(snap.rdma[2].device == "mlx5_10");
}

TEST_CASE("a recycled sample's maps are written over, giving what a fresh sample gives") {
    TempDir dir;
    const Roots roots = copy_node("roce", dir);
    InfinibandOptions options;
    options.rediscover_every = 2;
    options.rediscover_min_seconds = 0;
    auto recycling = make_infiniband_source(roots, options);
    auto fresh = make_infiniband_source(roots, options);
    Snapshot previous;
    const std::string port0 = roots.sysfs + "/class/infiniband/mlx5_0/ports/1";
    for (int i = 0; i < 8; ++i) {
        INFO("sample " << i);
        write_file(port0 + "/counters/port_xmit_data", std::to_string(1000 + 7 * i) + "\n");
        if (i == 3) write_file(port0 + "/hw_counters/zz_new_counter", "5\n");  // a name appears
        if (i == 5) fs::remove(port0 + "/hw_counters/np_cnp_sent");            // and one goes
        if (i == 6) plug_device(roots, "mlx5_3", "0000:b0:00.0");              // a port appears
        Snapshot got;
        recycling->recycle(previous);
        recycling->sample(got);
        Snapshot want;
        fresh->sample(want);
        CHECK(to_json(got).dump() == to_json(want).dump());
        const RdmaPort* p0 = find_port(got, "mlx5_0");
        REQUIRE(p0 != nullptr);
        CHECK(counter(p0->counters, "port_xmit_data") == 1000u + 7u * i);
        previous = std::move(got);
    }
    const RdmaPort* p0 = find_port(previous, "mlx5_0");
    CHECK(p0->hw_counters.count("zz_new_counter") == 1);
    CHECK(p0->hw_counters.count("np_cnp_sent") == 0);
    CHECK(previous.rdma.size() == 4);
}
