// The SPANK plugin's plugstack.conf arguments (spank/config.h) and the --stallscope / STALLSCOPE interval
// value (spank/option.h): pure functions, compiled here without any SPANK symbol as in tests/spank.
#include <string>

#include "spank/config.h"
#include "spank/option.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope::spank;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = stallscope::fuzz::as_text(data, size);

    // plugstack.conf splits arguments on whitespace.
    std::vector<std::string_view> args;
    std::string_view rest = text;
    while (!rest.empty()) {
        const auto start = rest.find_first_not_of(" \t\n");
        if (start == std::string_view::npos) break;
        rest.remove_prefix(start);
        const auto end = rest.find_first_of(" \t\n");
        args.push_back(rest.substr(0, end));
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    }
    const ConfigParse parsed = parse_plugin_args(args);
    FUZZ_CHECK(parsed.config.min_interval <= parsed.config.max_interval);
    for (const auto& e : parsed.errors) FUZZ_CHECK(!e.empty());

    // The option value arrives as a C string: up to the first NUL.
    const std::string value(text.substr(0, text.find('\0')));
    const IntervalChoice choice = parse_interval(value.c_str(), parsed.config, "--stallscope");
    if (choice.seconds) {
        FUZZ_CHECK(choice.error.empty());
        FUZZ_CHECK(*choice.seconds >= parsed.config.min_interval || value.empty());
        FUZZ_CHECK(*choice.seconds <= parsed.config.max_interval || value.empty());
    } else {
        FUZZ_CHECK(!choice.error.empty());
        FUZZ_CHECK(choice.error.size() < 400);
    }
    return 0;
}
