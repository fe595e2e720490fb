// The rules config file (`key = value`, # comments): accepted values are in the documented range.
#include "libstallscope/rules/thresholds.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string error;
    const auto t = parse_thresholds(std::string(fuzz::as_text(data, size)), "fuzz.conf", error);
    if (!t) {
        FUZZ_CHECK(error.rfind("fuzz.conf:", 0) == 0);
        return 0;
    }
    for (const auto& key : threshold_keys()) {
        const double value = (*t).*(key.member);
        FUZZ_CHECK(value >= key.min && value <= key.max);
    }
    return 0;
}
