// NCCL/RCCL RAS client output: TEXT and JSON STATUS reports (with the 2.28.7/2.28.9 comma repair), the
// MONITOR event stream, and the small helpers around them (address, comm hash, version).
#include "libstallscope/sources/nccl/ras_client.h"
#include "libstallscope/sources/nccl/ras_parse.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope::nccl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = stallscope::fuzz::as_text(data, size);
    (void)parse_ras_report(text);
    (void)parse_ras_text(text);
    (void)parse_ras_json(text);
    (void)repair_ras_json(text);
    std::string buffer(text);
    int garbage = 0;
    (void)take_monitor_events(buffer, garbage);
    FUZZ_CHECK(buffer.size() <= text.size());
    FUZZ_CHECK(garbage >= 0);
    const std::string_view first_line = text.substr(0, text.find('\n'));
    (void)parse_ras_addr(first_line);
    (void)normalize_comm_hash(first_line);
    (void)nccl_version_code(first_line);
    return 0;
}
