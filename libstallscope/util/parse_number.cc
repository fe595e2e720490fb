#include "libstallscope/util/parse_number.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace stallscope {

std::string_view trim(std::string_view text) {
    const char* ws = " \t\n\r\v\f";
    const auto first = text.find_first_not_of(ws);
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(ws);
    return text.substr(first, last - first + 1);
}

std::optional<std::uint64_t> parse_u64(std::string_view text, bool allow_hex) {
    text = trim(text);
    if (text.empty()) return std::nullopt;
    int base = 10;
    if (allow_hex && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        text.remove_prefix(2);
        base = 16;
    }
    // from_chars accepts no sign for unsigned types, so "-1" and "+1" fail here as they should.
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<double> parse_double(std::string_view text) {
    text = trim(text);
    if (text.empty()) return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
    return value;
}

std::string describe_bad_counter(std::string_view text) {
    for (unsigned char c : text)
        if (c == 0 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c >= 0x7f) return "binary data";
    const auto t = trim(text);
    if (t.empty()) return "empty";
    if (t.front() == '-') return "negative value '" + std::string(t.substr(0, 32)) + "'";
    bool digits_only = true;
    for (char c : t) digits_only = digits_only && c >= '0' && c <= '9';
    if (digits_only) return "out of range (> 2^64-1) '" + std::string(t.substr(0, 32)) + "'";
    return "not a number '" + std::string(t.substr(0, 32)) + "'";
}

}  // namespace stallscope
