// Strict number parsing for kernel/driver text: one place decides what is a valid counter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stallscope {

// Trims ASCII whitespace (sysfs values end in '\n') on both sides.
std::string_view trim(std::string_view text);

// Calls on_line(line) for every line of `text`, without its '\n'; a last line without one counts.
template <typename F>
void for_each_line(std::string_view text, F&& on_line) {
    while (!text.empty()) {
        const auto end = text.find('\n');
        on_line(text.substr(0, end));
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
}

// A whole unsigned 64-bit decimal integer, optionally surrounded by whitespace, or hex with 0x prefix
// when allow_hex is set. Empty text, signs, fractions, trailing garbage ("12abc", "N/A (no PMA)"), values
// above 2^64-1 and embedded NUL bytes are rejected: the caller turns nullopt into a warning.
std::optional<std::uint64_t> parse_u64(std::string_view text, bool allow_hex = false);

// A finite decimal number (loadavg "0.52", PSI "avg10=1.23"); same strictness.
std::optional<double> parse_double(std::string_view text);

// Why parse_u64 rejected a text, for the warning ("empty", "not a number", "negative", "out of range",
// "binary data"). Only called on the error path.
std::string describe_bad_counter(std::string_view text);

}  // namespace stallscope
