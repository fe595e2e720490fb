// AMD GPUs from the MI300X sysfs fixture, and the amdgpu text parsers.
#include <sys/stat.h>

#include <doctest/doctest.h>
#include <filesystem>

#include "gpu_test_util.h"
#include "libstallscope/sources/amdgpu/amdgpu_parse.h"
#include "libstallscope/sources/factories.h"

using namespace stallscope;
using gpu_test::any_contains;
using gpu_test::fixture;

TEST_CASE("AMD MI300X fixture: four GPUs in snapshot units, the BMC's ASPEED VGA left out") {
    Roots roots;
    roots.sysfs = fixture("nodes/amd-mi300/sys");
    auto source = make_amdgpu_source(roots);
    CHECK(source->name() == "amdgpu");
    Snapshot snap;
    source->sample(snap);
    CHECK(snap.warnings.empty());
    REQUIRE(snap.gpus.size() == 4);
    const Gpu& g0 = snap.gpus[0];
    CHECK(g0.index == 0);
    CHECK(g0.vendor == "amd");
    CHECK(g0.name == "AMD Instinct MI300X OAM");
    CHECK(g0.uuid == "d3c4e1f2a9b81734");
    CHECK(g0.pci_bus_id == "00000000:0C:00.0");
    CHECK(g0.utilization_pct == doctest::Approx(98));
    CHECK(g0.memory_used_bytes == 163208757248ULL);
    CHECK(g0.memory_total_bytes == 206141652992ULL);
    CHECK(g0.power_w == doctest::Approx(712.0));       // power1_input 712000000 uW
    CHECK(g0.temperature_c == doctest::Approx(78.0));  // junction: MI300X has no edge sensor
    CHECK(g0.ecc_uncorrected == 0u);
    CHECK(g0.ecc_corrected == 2u);                      // umc ce: 2
    CHECK(g0.power_limit_w == doctest::Approx(750.0));  // power1_cap 750000000 uW

    CHECK(snap.gpus[1].pci_bus_id == "00000000:22:00.0");
    CHECK(snap.gpus[2].ecc_uncorrected == 1u);
    CHECK(snap.gpus[2].ecc_corrected == 17u);
    CHECK(snap.gpus[2].temperature_c == doctest::Approx(81.0));
    CHECK(snap.gpus[3].index == 3);
    CHECK(snap.gpus[3].power_w == doctest::Approx(705.0));

    Snapshot again;  // kept-open files give the same values on the next sample
    source->sample(again);
    REQUIRE(again.gpus.size() == 4);
    CHECK(again.gpus[3].memory_used_bytes == 162939273216ULL);
}

TEST_CASE("A garbage amdgpu value or an inaccessible RAS count is null with a warning naming the file") {
    gpu_test::TempDir dir;
    std::filesystem::copy(fixture("nodes/amd-mi300/sys"), dir / "sys",
                          std::filesystem::copy_options::recursive);
    Roots roots;
    roots.sysfs = dir / "sys";
    auto source = make_amdgpu_source(roots);
    Snapshot first;
    source->sample(first);
    REQUIRE(first.gpus.size() == 4);

    const std::string card1 = roots.sysfs + "/class/drm/card1/device";
    gpu_test::write_file(card1 + "/gpu_busy_percent", "N/A\n");
    gpu_test::write_file(card1 + "/ras/umc_err_count", "Query currently inaccessible\n");
    Snapshot second;
    source->sample(second);
    REQUIRE(second.gpus.size() == 4);
    CHECK_FALSE(second.gpus[1].utilization_pct.has_value());
    CHECK_FALSE(second.gpus[1].ecc_uncorrected.has_value());
    CHECK_FALSE(second.gpus[1].ecc_corrected.has_value());
    CHECK(second.gpus[1].memory_used_bytes.has_value());
    CHECK(second.gpus[0].utilization_pct.has_value());
    CHECK(any_contains(second.warnings, card1 + "/gpu_busy_percent"));
    CHECK(any_contains(second.warnings, card1 + "/ras/umc_err_count"));
    CHECK(second.warnings.size() == 2);
}

TEST_CASE("A sysfs tree without drm cards gives no AMD GPUs and no warnings") {
    gpu_test::TempDir dir;
    Roots roots;
    roots.sysfs = dir.path();
    auto source = make_amdgpu_source(roots);
    Snapshot snap;
    source->sample(snap);
    CHECK(snap.gpus.empty());
    CHECK(snap.warnings.empty());
}

TEST_CASE("RAS err_count text 'ue: N / ce: M' parses; anything else is rejected") {
    auto ok = parse_ras_err_count("ue: 3\nce: 17\n");
    REQUIRE(ok.has_value());
    CHECK(ok->uncorrected == 3u);
    CHECK(ok->corrected == 17u);
    CHECK_FALSE(parse_ras_err_count("Query currently inaccessible\n").has_value());
    CHECK_FALSE(parse_ras_err_count("ue: 3\n").has_value());
    CHECK_FALSE(parse_ras_err_count("ue: -1\nce: 0\n").has_value());
    CHECK_FALSE(parse_ras_err_count("ue: 1\nce: 2\nue: 3\n").has_value());
    CHECK_FALSE(parse_ras_err_count("").has_value());
    CHECK_FALSE(parse_ras_err_count(std::string("ue: 1\0\nce: 2\n", 13)).has_value());
}

TEST_CASE("The GPU temperature is the edge sensor when present, else junction") {
    auto edge = choose_temperature_sensor({{1, "edge"}, {2, "junction"}, {3, "mem"}});
    REQUIRE(edge.has_value());
    CHECK(edge->input == 1);
    CHECK(edge->label == "edge");
    auto junction = choose_temperature_sensor({{2, "junction"}, {3, "mem"}});
    REQUIRE(junction.has_value());
    CHECK(junction->input == 2);
    auto unlabelled = choose_temperature_sensor({{3, ""}, {1, ""}});
    REQUIRE(unlabelled.has_value());
    CHECK(unlabelled->input == 1);
    CHECK_FALSE(choose_temperature_sensor({}).has_value());
}

TEST_CASE("PCI_SLOT_NAME comes out of a device uevent") {
    CHECK(pci_slot_from_uevent("DRIVER=amdgpu\nPCI_ID=1002:74A1\nPCI_SLOT_NAME=0000:0c:00.0\n") ==
          "0000:0c:00.0");
    CHECK(pci_slot_from_uevent("DRIVER=amdgpu\n").empty());
}
