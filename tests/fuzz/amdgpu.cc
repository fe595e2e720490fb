// amdgpu sysfs text: ras/<block>_err_count, device/uevent, and the hwmon temperature label choice.
#include <charconv>

#include "libstallscope/sources/amdgpu/amdgpu_parse.h"
#include "libstallscope/util/parse_number.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    (void)parse_ras_err_count(text);
    const std::string slot = pci_slot_from_uevent(text);
    FUZZ_CHECK(slot.size() <= text.size());

    // Lines "<N> <label>" stand for (temp<N>_input, temp<N>_label) pairs.
    std::vector<std::pair<int, std::string>> sensors;
    std::string_view rest = text;
    while (!rest.empty()) {
        const auto newline = rest.find('\n');
        const std::string_view line = rest.substr(0, newline);
        rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
        int n = 0;
        const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
        if (ec != std::errc()) continue;
        sensors.emplace_back(n, std::string(line.substr(static_cast<std::size_t>(end - line.data()))));
    }
    if (const auto choice = choose_temperature_sensor(sensors)) {
        bool found = false;
        for (const auto& [input, label] : sensors) found = found || input == choice->input;
        FUZZ_CHECK(found);
    } else {
        FUZZ_CHECK(sensors.empty());
    }
    return 0;
}
