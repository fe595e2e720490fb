// NCCL text the helper tails or runs: NCCL_DEBUG log lines, Inspector JSON lines, nccl-tests output
// (text and JSON), and the path / argument list splitters of its configuration.
#include "libstallscope/sources/nccl/inspector.h"
#include "libstallscope/sources/nccl/log_scan.h"
#include "libstallscope/sources/nccl/nccl_tests.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope::nccl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = stallscope::fuzz::as_text(data, size);
    std::string_view rest = text;
    while (true) {
        const auto newline = rest.find('\n');
        const std::string_view line = rest.substr(0, newline);
        stallscope::NcclLogEvent event;
        (void)classify_log_line(line, event);
        std::string why;
        (void)parse_inspector_line(line, why);
        if (newline == std::string_view::npos) break;
        rest.remove_prefix(newline + 1);
    }
    (void)parse_nccl_tests_output(text);
    (void)parse_nccl_tests_json(text);
    (void)split_paths(text);
    (void)split_args(text);
    (void)debug_file_glob(text.substr(0, 200), "node001");
    return 0;
}
