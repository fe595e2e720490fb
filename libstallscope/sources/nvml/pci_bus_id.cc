#include "libstallscope/sources/nvml/pci_bus_id.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace stallscope {

namespace {

// min_digits..max_digits hex digits from the front of `text` (more digits than max_digits: rejected).
std::optional<std::uint32_t> take_hex(std::string_view& text, std::size_t min_digits,
                                      std::size_t max_digits) {
    std::size_t n = 0;
    while (n < text.size() && n < max_digits + 1 && std::isxdigit(static_cast<unsigned char>(text[n]))) ++n;
    if (n < min_digits || n > max_digits) return std::nullopt;
    std::uint32_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + n, value, 16);
    if (ec != std::errc() || ptr != text.data() + n) return std::nullopt;
    text.remove_prefix(n);
    return value;
}

bool take_char(std::string_view& text, char c) {
    if (text.empty() || text.front() != c) return false;
    text.remove_prefix(1);
    return true;
}

}  // namespace

std::optional<PciAddress> parse_pci_bus_id(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n'))
        text.remove_suffix(1);
    if (text.size() >= 4 && (text.substr(0, 4) == "PCI:" || text.substr(0, 4) == "pci:"))
        text.remove_prefix(4);

    // Count the colons to tell "domain:bus:device" from "bus:device".
    std::size_t colons = 0;
    for (char c : text) colons += c == ':';
    PciAddress address;
    if (colons == 2) {
        auto domain = take_hex(text, 4, 8);
        if (!domain || !take_char(text, ':')) return std::nullopt;
        address.domain = *domain;
    } else if (colons != 1) {
        return std::nullopt;
    }
    auto bus = take_hex(text, 2, 2);
    if (!bus || !take_char(text, ':')) return std::nullopt;
    auto device = take_hex(text, 2, 2);
    if (!device || *device > 0x1f) return std::nullopt;
    address.bus = static_cast<std::uint8_t>(*bus);
    address.device = static_cast<std::uint8_t>(*device);
    if (take_char(text, '.')) {
        auto function = take_hex(text, 1, 1);
        if (!function || *function > 7) return std::nullopt;
        address.function = static_cast<std::uint8_t>(*function);
    }
    if (!text.empty()) return std::nullopt;
    return address;
}

std::string format_pci_bus_id(const PciAddress& address) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%08X:%02X:%02X.%X", static_cast<unsigned>(address.domain),
                  static_cast<unsigned>(address.bus), static_cast<unsigned>(address.device),
                  static_cast<unsigned>(address.function.value_or(0)));
    return buffer;
}

std::optional<std::string> normalize_pci_bus_id(std::string_view text) {
    auto address = parse_pci_bus_id(text);
    if (!address) return std::nullopt;
    return format_pci_bus_id(*address);
}

bool same_pci_device(const PciAddress& a, const PciAddress& b) {
    if (a.domain != b.domain || a.bus != b.bus || a.device != b.device) return false;
    return !a.function || !b.function || *a.function == *b.function;
}

bool same_pci_device(std::string_view a, std::string_view b) {
    auto pa = parse_pci_bus_id(a);
    auto pb = parse_pci_bus_id(b);
    return pa && pb && same_pci_device(*pa, *pb);
}

}  // namespace stallscope
