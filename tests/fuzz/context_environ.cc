// /proc/<pid>/environ (NUL-separated NAME=value) and the Slurm context built from it.
#include "libstallscope/sources/context/context_parsers.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    const Environment env = parse_environ(text);
    for (const auto& [name, value] : env) FUZZ_CHECK(is_context_variable(name));
    const JobContext context = slurm_context_from_environment(env);
    (void)context;
    for (const auto& item : split_list(text)) FUZZ_CHECK(!item.empty());
    return 0;
}
