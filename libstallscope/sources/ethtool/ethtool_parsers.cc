#include "libstallscope/sources/ethtool/ethtool_parsers.h"

#include <array>

#include "libstallscope/util/parse_number.h"

namespace stallscope {
namespace {

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

}  // namespace

bool is_backpressure_stat(std::string_view name) {
    constexpr std::array<std::string_view, 7> kParts{"pause",   "pfc",           "xoff",         "xon",
                                                     "discard", "out_of_buffer", "outbound_pci_"};
    for (auto part : kParts)
        if (contains(name, part)) return true;
    if (name == "rx_buffer_passed_thres_phy") return true;
    // rx_prio3_marked: packets the NIC ECN-marked on priority 3 because its buffer was filling.
    return name.starts_with("rx_prio") && name.ends_with("_marked");
}

CounterMap parse_ethtool_stats_text(std::string_view text, std::string_view file,
                                    std::vector<std::string>& warnings) {
    CounterMap out;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        const std::string_view line = trim(text.substr(0, nl));
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (line.empty() || line == "NIC statistics:") continue;
        const auto colon = line.rfind(':');
        const std::string_view name =
            colon == std::string_view::npos ? std::string_view{} : trim(line.substr(0, colon));
        if (name.empty()) {
            warnings.push_back(std::string(file) + ": not a 'name: value' line '" +
                               std::string(line.substr(0, 40)) + "'");
            continue;
        }
        if (!is_backpressure_stat(name)) continue;
        const std::string_view raw = line.substr(colon + 1);
        Counter value = parse_u64(raw);
        if (!value)
            warnings.push_back(std::string(file) + ": " + std::string(name) + ": " +
                               describe_bad_counter(raw));
        out.insert_or_assign(std::string(name), value);
    }
    return out;
}

}  // namespace stallscope
