// Pure parsers for amdgpu sysfs text (kernel docs amdgpu_pm.c / amdgpu_ras.c, node-health-anchors.md
// section 8).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

struct RasErrorCount {
    std::uint64_t uncorrected = 0;  // "ue: N"
    std::uint64_t corrected = 0;    // "ce: N"
};

// ras/<block>_err_count: "ue: 0\nce: 2\n". nullopt for anything else, including the "Query currently
// inaccessible" the driver prints while a RAS interrupt is being handled.
std::optional<RasErrorCount> parse_ras_err_count(std::string_view text);

// PCI_SLOT_NAME from device/uevent ("PCI_SLOT_NAME=0000:0c:00.0"), "" when absent.
std::string pci_slot_from_uevent(std::string_view uevent);

// Which hwmon temp<N>_input stands for the GPU temperature, given (N, temp<N>_label text) pairs:
// "edge" when the board has it (the sensor amdgpu calls the GPU temperature, closest to NVML's), else
// "junction" (hotspot; MI200/MI300 report no edge sensor), else the lowest N. nullopt when none.
struct TemperatureChoice {
    int input = 0;      // N of temp<N>_input
    std::string label;  // "edge", "junction", or "" when unlabelled
};
std::optional<TemperatureChoice> choose_temperature_sensor(
    const std::vector<std::pair<int, std::string>>& sensors);

}  // namespace stallscope
