// Xid lines from the kernel log: the parser on every line form, severity, PCI matching, and the kmsg
// source mapping Xids to the GPUs the NVIDIA source found.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <filesystem>

#include "gpu_test_util.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/kmsg/kmsg_source.h"
#include "libstallscope/sources/kmsg/xid_parser.h"
#include "libstallscope/sources/nvml/pci_bus_id.h"

using namespace stallscope;
using gpu_test::any_contains;
using gpu_test::fixture;
using gpu_test::ScopedEnv;

TEST_CASE("Xid parser reads the /dev/kmsg record form") {
    auto xid = parse_xid_line(
        "4,1023,698412003,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the "
        "bus.");
    REQUIRE(xid.has_value());
    CHECK(xid->code == 79);
    CHECK(xid->pci_bus_id == "00000000:18:00.0");
    CHECK(xid->message == "pid=1234, name=python, GPU has fallen off the bus.");
}

TEST_CASE("Xid parser reads plain dmesg and syslog lines") {
    auto dmesg =
        parse_xid_line("[12345.678] NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 2)");
    REQUIRE(dmesg.has_value());
    CHECK(dmesg->code == 13);
    CHECK(dmesg->pci_bus_id == "00000000:3B:00.0");
    CHECK(dmesg->message == "Graphics SM Warp Exception on (GPC 2)");
    auto syslog =
        parse_xid_line("Mar 11 04:12:07 node17 kernel: [1.2] NVRM: Xid (PCI:0000:86:00): 154, GPU recovery");
    REQUIRE(syslog.has_value());
    CHECK(syslog->code == 154);
    auto bare = parse_xid_line("NVRM: Xid (PCI:0000:86:00): 119");
    REQUIRE(bare.has_value());
    CHECK(bare->code == 119);
    CHECK(bare->message.empty());
}

TEST_CASE("Xid parser rejects noise, SXid, truncated, binary and malformed lines") {
    CHECK_FALSE(parse_xid_line("6,1033,699100000,-;eth0: renamed from veth1a2b3c4"));
    CHECK_FALSE(
        parse_xid_line("4,1029,1,-;nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, pid=1100, Non-fatal"));
    CHECK_FALSE(parse_xid_line("4,1032,699000300,-;NVRM: Xid (PCI:0000:ab:0"));
    CHECK_FALSE(parse_xid_line("4,1032,699000300,-;NVRM: Xid (PCI:0000:ab:00):"));
    CHECK_FALSE(parse_xid_line("[1] NVRM: Xid (PCI:0000:86:00): 79abc, not a code"));
    CHECK_FALSE(parse_xid_line("[1] NVRM: Xid (PCI:0000:zz:00): 79, bad pci id"));
    CHECK_FALSE(parse_xid_line("[1] NVRM: Xid (PCI:0000:18:00): -79, negative"));
    CHECK_FALSE(parse_xid_line(std::string("4,1,2,-;NVRM: Xid (PCI:0000:ab:00): 1\0\x01 garbage", 44)));
    CHECK_FALSE(parse_xid_line(" SUBSYSTEM=pci"));
    CHECK_FALSE(parse_xid_line(""));
}

TEST_CASE("Xid severity follows node-health-anchors.md sections 1.3 and 6") {
    for (int code : {79, 74, 48, 64, 94, 95, 119, 120, 140, 62, 109}) {
        CAPTURE(code);
        CHECK(std::string(classify_xid(code)) == "critical");
    }
    for (int code : {13, 31, 45, 92, 149, 154}) {
        CAPTURE(code);
        CHECK(std::string(classify_xid(code)) == "warning");
    }
    for (int code : {63, 43, 152}) {
        CAPTURE(code);
        CHECK(std::string(classify_xid(code)) == "info");
    }
    CHECK(std::string(classify_xid(4242)) == "warning");  // unknown: never silently info
}

TEST_CASE("PCI bus ids match across NVML, sysfs and kernel-log spellings") {
    CHECK(normalize_pci_bus_id("PCI:0000:18:00") == "00000000:18:00.0");
    CHECK(normalize_pci_bus_id("0000:c1:00.0") == "00000000:C1:00.0");
    CHECK(normalize_pci_bus_id("00000000:DB:00.0") == "00000000:DB:00.0");
    CHECK(normalize_pci_bus_id("3b:00.0") == "00000000:3B:00.0");
    CHECK(normalize_pci_bus_id("0001:18:00.0") == "00000001:18:00.0");
    CHECK(same_pci_device("PCI:0000:18:00", "00000000:18:00.0"));
    CHECK(same_pci_device("PCI:0000:db:00", "00000000:DB:00.0"));
    CHECK_FALSE(same_pci_device("PCI:0000:18:00", "00000000:1A:00.0"));
    CHECK_FALSE(same_pci_device("PCI:0001:18:00", "00000000:18:00.0"));
    CHECK_FALSE(same_pci_device("0000:18:00.1", "00000000:18:00.0"));
    CHECK_FALSE(normalize_pci_bus_id("not-a-bus-id"));
    CHECK_FALSE(normalize_pci_bus_id("0000:18:00.9"));
    CHECK_FALSE(normalize_pci_bus_id("000000000:18:00.0"));
    CHECK_FALSE(normalize_pci_bus_id(""));
}

namespace {

// The NVIDIA source (fake NVML, DGX H100 fixture) followed by the kmsg source, as the sampler orders them.
struct DgxWithKmsg {
    gpu_test::TempDir dir;
    ScopedEnv env{"STALLSCOPE_FAKE_NVML_FIXTURE", fixture("nodes/dgx-h100/nvml.json")};
    std::unique_ptr<Source> gpus, kmsg;
    explicit DgxWithKmsg(const std::string& initial_log) {
        gpu_test::write_file(dir / "kmsg", initial_log);
        Roots roots;
        roots.dev = dir.path();
        roots.nvml_library = STALLSCOPE_FAKE_NVML_PATH;
        gpus = make_nvidia_source(roots);
        kmsg = make_kmsg_source(roots);
    }
    Snapshot sample() {
        Snapshot snap;
        gpus->sample(snap);
        kmsg->sample(snap);
        return snap;
    }
};

}  // namespace

TEST_CASE("kmsg source maps Xid 79 to the GPU at PCI 18 and classifies it critical") {
    DgxWithKmsg node(gpu_test::read_file(fixture("kmsg/dgx-h100-xids.kmsg")));
    const Snapshot snap = node.sample();
    CHECK(snap.warnings.empty());
    REQUIRE(snap.gpus.size() == 8);
    // 79, 13, 48, 94, 31 on this node's GPUs, 63 on a GPU not in the snapshot; noise, SXid, garbage,
    // binary and truncated lines are ignored.
    REQUIRE(snap.xid_events.size() == 6);
    const XidEvent& fell_off = snap.xid_events[0];
    CHECK(fell_off.code == 79);
    CHECK(fell_off.gpu_index == 0);
    CHECK(fell_off.pci_bus_id == "00000000:18:00.0");
    CHECK(fell_off.severity == "critical");
    CHECK(fell_off.message == "pid=1234, name=python, GPU has fallen off the bus.");
    CHECK(snap.gpus[0].xid == std::vector<int>{79});
    CHECK(snap.gpus[1].xid == std::vector<int>{13});  // 2a
    CHECK(snap.gpus[3].xid == std::vector<int>{48});  // 5d
    CHECK(snap.gpus[4].xid == std::vector<int>{94});  // 9a
    CHECK(snap.gpus[7].xid == std::vector<int>{31});  // db
    CHECK(snap.gpus[2].xid.empty());
    CHECK(snap.xid_events[1].severity == "warning");
    CHECK(snap.xid_events[2].severity == "critical");
    const XidEvent& elsewhere = snap.xid_events[5];
    CHECK(elsewhere.code == 63);
    CHECK(elsewhere.gpu_index == -1);
    CHECK(elsewhere.pci_bus_id == "00000000:C1:00.0");
    CHECK(elsewhere.severity == "info");
}

TEST_CASE("kmsg source reads only the lines appended after the previous sample") {
    DgxWithKmsg node(gpu_test::read_file(fixture("kmsg/dgx-h100-xids.kmsg")));
    CHECK(node.sample().xid_events.size() == 6);

    const Snapshot quiet = node.sample();
    CHECK(quiet.xid_events.empty());
    REQUIRE(!quiet.gpus.empty());
    for (const auto& gpu : quiet.gpus) CHECK(gpu.xid.empty());

    gpu_test::write_file(node.dir / "kmsg", gpu_test::read_file(fixture("kmsg/dgx-h100-append.kmsg")), true);
    const Snapshot nvlink = node.sample();
    REQUIRE(nvlink.xid_events.size() == 1);
    CHECK(nvlink.xid_events[0].code == 74);
    CHECK(nvlink.xid_events[0].gpu_index == 6);  // ba
    CHECK(nvlink.xid_events[0].severity == "critical");
    CHECK(nvlink.gpus[6].xid == std::vector<int>{74});
    CHECK(nvlink.gpus[0].xid.empty());
}

TEST_CASE("kmsg source holds a half-written line until its newline arrives") {
    DgxWithKmsg node("");
    CHECK(node.sample().xid_events.empty());
    gpu_test::write_file(node.dir / "kmsg", "4,1,2,-;NVRM: Xid (PCI:0000:ab:00): 79, pid=7, na", true);
    CHECK(node.sample().xid_events.empty());
    gpu_test::write_file(node.dir / "kmsg", "me=python, GPU has fallen off the bus.\n", true);
    const Snapshot snap = node.sample();
    REQUIRE(snap.xid_events.size() == 1);
    CHECK(snap.xid_events[0].gpu_index == 5);
    CHECK(snap.xid_events[0].message == "pid=7, name=python, GPU has fallen off the bus.");
}

TEST_CASE("A plain dmesg text file works as the kernel log too") {
    gpu_test::TempDir dir;
    std::filesystem::copy_file(fixture("kmsg/dmesg-text.log"), dir / "kmsg");
    Roots roots;
    roots.dev = dir.path();
    auto source = make_kmsg_source(roots);
    Snapshot snap;
    source->sample(snap);
    REQUIRE(snap.xid_events.size() == 4);  // 13, 13, 119, 154; the malformed two are ignored
    CHECK(snap.xid_events[2].code == 119);
    CHECK(snap.xid_events[2].severity == "critical");
    CHECK(snap.xid_events[2].gpu_index == -1);  // no GPUs in this snapshot
}

TEST_CASE("Missing kmsg turns Xid detection off with one warning per run") {
    gpu_test::TempDir dir;
    Roots roots;
    roots.dev = dir.path();
    auto source = make_kmsg_source(roots);
    Snapshot first, second;
    source->sample(first);
    source->sample(second);
    REQUIRE(first.warnings.size() == 1);
    CHECK(first.warnings[0] == dir / "kmsg" + ": No such file or directory: Xid detection off");
    CHECK(second.warnings.empty());
}

TEST_CASE("Unreadable kmsg (dmesg_restrict) is one warning, not an error") {
    gpu_test::TempDir dir;
    gpu_test::write_file(dir / "kmsg", "");
    REQUIRE(::chmod((dir / "kmsg").c_str(), 0) == 0);
    Roots roots;
    roots.dev = dir.path();
    // Root ignores file modes: open as "nobody" for the test (seteuid is reversible for root).
    const bool was_root = ::geteuid() == 0;
    if (was_root) REQUIRE(::seteuid(65534) == 0);
    auto source = make_kmsg_source(roots);
    if (was_root) REQUIRE(::seteuid(0) == 0);
    Snapshot first, second;
    source->sample(first);
    source->sample(second);
    REQUIRE(first.warnings.size() == 1);
    CHECK(first.warnings[0] == dir / "kmsg" + ": kmsg not readable (dmesg_restrict?): Xid detection off");
    CHECK(second.warnings.empty());
}

TEST_CASE("On the real /dev/kmsg the source starts at the end: no old Xids, no read errors") {
    const int probe = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
    if (probe < 0) {
        MESSAGE("/dev/kmsg not readable here; record-mode test not run");
        return;
    }
    ::close(probe);
    Roots roots;  // dev = /dev
    auto source = make_kmsg_source(roots);
    Snapshot snap;
    source->sample(snap);
    CHECK(snap.warnings.empty());
    CHECK(snap.xid_events.empty());
}

TEST_CASE("A kmsg fd handed over by a privileged parent is read from its current position") {
    gpu_test::TempDir dir;
    gpu_test::write_file(dir / "kmsg", gpu_test::read_file(fixture("kmsg/dgx-h100-append.kmsg")));
    const int fd = ::open((dir / "kmsg").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    auto source = make_kmsg_source_from_fd(fd, "kmsg(fd)");
    Snapshot snap;
    source->sample(snap);
    REQUIRE(snap.xid_events.size() == 1);
    CHECK(snap.xid_events[0].code == 74);
}
