// The job record the SPANK plugin reads as root before it writes AdminComment (spank/job_record.h): the
// job reader's or `scontrol --json show job`'s JSON, job-controlled strings inside. Never throws, refuses
// deep or oversized input before building it, and every reason it gives is escaped for slurmd's log.
#include "spank/job_record.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope::spank;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = stallscope::fuzz::as_text(data, size);
    for (const char* id : {"13", "1", "4", "5"}) {
        const JobAdminComment r = parse_job_record_json(text, id);
        if (r.state == AdminCommentRead::present) FUZZ_CHECK(!r.value.empty() && r.why.empty());
        if (r.state == AdminCommentRead::absent) FUZZ_CHECK(r.value.empty() && r.why.empty());
        if (r.state == AdminCommentRead::ambiguous) FUZZ_CHECK(r.value.empty() && !r.why.empty());
        for (char c : r.why) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
    }
    return 0;
}
