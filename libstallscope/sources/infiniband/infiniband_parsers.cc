#include "libstallscope/sources/infiniband/infiniband_parsers.h"

#include <cstdint>
#include <limits>

#include "libstallscope/util/parse_number.h"

namespace stallscope {

std::optional<std::string> parse_port_state(std::string_view text) {
    for (unsigned char c : text)
        if (c == 0 || c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t' && c != '\r')) return std::nullopt;
    std::string_view t = trim(text);
    if (const auto colon = t.find(':'); colon != std::string_view::npos && parse_u64(t.substr(0, colon)))
        t = trim(t.substr(colon + 1));
    if (t.empty()) return std::nullopt;
    return std::string(t);
}

Gauge parse_rate_gbps(std::string_view text) {
    const std::string_view t = trim(text);
    const auto space = t.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const std::string_view unit = trim(t.substr(space + 1));
    if (unit.substr(0, 6) != "Gb/sec") return std::nullopt;
    auto value = parse_double(t.substr(0, space));
    if (!value || *value < 0) return std::nullopt;
    return value;
}

Counter data_words_to_bytes(Counter words) {
    if (!words || *words > std::numeric_limits<std::uint64_t>::max() / 4) return std::nullopt;
    return *words * 4;
}

bool is_no_pma(std::string_view text) {
    return trim(text).substr(0, 3) == "N/A";
}

}  // namespace stallscope
