// The stallscope/1 segment inside a job's (Admin)Comment, which may hold other tools' text.
#include "libstallscope/timeline/job_comment.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string comment(fuzz::as_text(data, size));
    if (const auto seg = parse_comment_segment(comment)) FUZZ_CHECK(!seg->label.empty());
    return 0;
}
