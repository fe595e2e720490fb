// snapshot_from_json on any JSON object: never throws, and what it reads survives a to_json round trip
// unchanged (the property `stallscope replay` relies on to reproduce a recorded verdict byte for byte).
#include "libstallscope/model/snapshot_json.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    const Json object = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded() || !object.is_object()) return 0;
    std::vector<std::string> problems;
    const Snapshot first = snapshot_from_json(object, problems);
    const Json written = to_json(first);
    std::vector<std::string> again;
    const Snapshot second = snapshot_from_json(written, again);
    FUZZ_CHECK(again.empty());
    FUZZ_CHECK(to_json(second) == written);
    (void)written.dump(-1, ' ', false, Json::error_handler_t::replace);
    return 0;
}
