// NVIDIA Xid lines from /dev/kmsg records, dmesg text or bare text, one line per call.
#include "libstallscope/sources/kmsg/xid_parser.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text = fuzz::as_text(data, size);
    // Many seeds hold several records; feed each line as the kmsg source does.
    while (true) {
        const auto newline = text.find('\n');
        if (const auto xid = parse_xid_line(text.substr(0, newline))) {
            FUZZ_CHECK(xid->code > 0 && xid->code <= 65535);
            FUZZ_CHECK(xid->pci_bus_id.size() == 16);  // canonical "00000000:18:00.0"
            const std::string severity = classify_xid(xid->code);
            FUZZ_CHECK(severity == "critical" || severity == "warning" || severity == "info");
        }
        if (newline == std::string_view::npos) break;
        text.remove_prefix(newline + 1);
    }
    return 0;
}
