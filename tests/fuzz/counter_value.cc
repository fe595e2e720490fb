// sysfs / procfs counter values: parse_u64 (decimal and hex), parse_double, describe_bad_counter, and the
// InfiniBand port attribute parsers (state, rate, "N/A (no PMA)").
#include <charconv>
#include <cmath>

#include "libstallscope/sources/infiniband/infiniband_parsers.h"
#include "libstallscope/util/parse_number.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);

    const auto trimmed = trim(text);
    FUZZ_CHECK(trimmed.size() <= text.size());

    const auto dec = parse_u64(text);
    const auto hex = parse_u64(text, true);
    if (dec) {
        // A decimal value is also accepted in hex mode, with the same value unless it has a 0x prefix.
        FUZZ_CHECK(hex.has_value());
        // Round trip: the accepted text is exactly the decimal digits of the value.
        char buf[32];
        const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *dec);
        FUZZ_CHECK(ec == std::errc());
        const std::string_view digits(buf, static_cast<std::size_t>(end - buf));
        FUZZ_CHECK(trimmed == digits || (trimmed.size() > digits.size() && trimmed.starts_with('0')));
    } else {
        const std::string why = describe_bad_counter(text);
        FUZZ_CHECK(!why.empty());
        FUZZ_CHECK(why.size() < 80);  // quoted text is capped at 32 characters
    }

    if (const auto d = parse_double(text)) FUZZ_CHECK(std::isfinite(*d));

    if (const auto state = parse_port_state(text)) FUZZ_CHECK(state->size() <= text.size());
    if (const auto rate = parse_rate_gbps(text)) FUZZ_CHECK(std::isfinite(*rate) && *rate >= 0);
    (void)is_no_pma(text);
    if (dec) {
        const Counter bytes = data_words_to_bytes(*dec);
        if (bytes) FUZZ_CHECK(*bytes / 4 == *dec);
    }
    return 0;
}
