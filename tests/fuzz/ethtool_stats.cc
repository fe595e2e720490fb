// `ethtool -S` text (fixture format): only backpressure statistics are kept, garbage values are null.
#include "libstallscope/sources/ethtool/ethtool_parsers.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> warnings;
    const CounterMap stats = parse_ethtool_stats_text(fuzz::as_text(data, size), "ethtool/eth0", warnings);
    for (const auto& [name, value] : stats) FUZZ_CHECK(is_backpressure_stat(name));
    return 0;
}
