#include "libstallscope/sources/amdgpu/amdgpu_parse.h"

#include "libstallscope/util/parse_number.h"

namespace stallscope {

std::optional<RasErrorCount> parse_ras_err_count(std::string_view text) {
    std::optional<std::uint64_t> ue, ce;
    while (!text.empty()) {
        const auto newline = text.find('\n');
        const std::string_view line = trim(text.substr(0, newline));
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        if (line.empty()) continue;
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) return std::nullopt;
        const std::string_view key = trim(line.substr(0, colon));
        const auto value = parse_u64(line.substr(colon + 1));
        if (!value) return std::nullopt;
        if (key == "ue" && !ue) {
            ue = value;
        } else if (key == "ce" && !ce) {
            ce = value;
        } else {
            return std::nullopt;
        }
    }
    if (!ue || !ce) return std::nullopt;
    return RasErrorCount{*ue, *ce};
}

std::string pci_slot_from_uevent(std::string_view uevent) {
    constexpr std::string_view kKey = "PCI_SLOT_NAME=";
    while (!uevent.empty()) {
        const auto newline = uevent.find('\n');
        const std::string_view line = uevent.substr(0, newline);
        uevent.remove_prefix(newline == std::string_view::npos ? uevent.size() : newline + 1);
        if (line.substr(0, kKey.size()) == kKey) return std::string(trim(line.substr(kKey.size())));
    }
    return "";
}

std::optional<TemperatureChoice> choose_temperature_sensor(
    const std::vector<std::pair<int, std::string>>& sensors) {
    for (const char* wanted : {"edge", "junction"}) {
        for (const auto& [input, label] : sensors) {
            if (trim(label) == wanted) return TemperatureChoice{input, wanted};
        }
    }
    const std::pair<int, std::string>* lowest = nullptr;
    for (const auto& sensor : sensors) {
        if (!lowest || sensor.first < lowest->first) lowest = &sensor;
    }
    if (!lowest) return std::nullopt;
    return TemperatureChoice{lowest->first, std::string(trim(lowest->second))};
}

}  // namespace stallscope
