// PyTorch flight-recorder dumps: the bounded pickle reader (parse_pickle) under small limits, and the
// dump summary (read_flight_recorder_dump) with its JSON round trip (what the evidence file keeps and the
// job merge reads back must be the same summary).
#include "libstallscope/hang/flight_recorder.h"
#include "libstallscope/hang/pickle_reader.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes = fuzz::as_text(data, size);
    PickleLimits small;
    small.max_values = 4096;
    small.max_text_bytes = 1 << 16;
    small.max_height = 16;
    PickleDocument doc;
    std::string error;
    if (parse_pickle(bytes, doc, error, small)) {
        FUZZ_CHECK(!doc.values.empty() && doc.values.size() <= small.max_values);
        FUZZ_CHECK(doc.root < doc.values.size());
        for (const auto& v : doc.values) FUZZ_CHECK(v.height <= small.max_height);
        FUZZ_CHECK(root_of(doc).repr(300).size() <= 300);
    } else {
        FUZZ_CHECK(!error.empty());
    }

    FlightRecorderDump dump;
    std::vector<std::string> warnings;
    if (read_flight_recorder_dump(bytes, dump, warnings, error, small)) {
        for (const auto& g : dump.groups) FUZZ_CHECK(g.newest.size() <= kNewestEntriesPerGroup);
        std::vector<std::string> problems;
        const FlightRecorderDump back = flight_recorder_from_json(
            Json::parse(to_json(dump).dump(-1, ' ', false, Json::error_handler_t::replace), nullptr, false),
            problems);
        // Text that is not UTF-8 is replaced on the way out; everything else must come back as it was.
        if (problems.empty() && to_json(back).dump(-1, ' ', false, Json::error_handler_t::replace) ==
                                    to_json(dump).dump(-1, ' ', false, Json::error_handler_t::replace))
            FUZZ_CHECK(back.groups.size() == dump.groups.size());
    }
    return 0;
}
