// read_verdict_file on any file contents: the job merge (report, summarize, the job writer at stop) reads
// every node's verdict.<step>.<host>.json from a directory the job user writes, so each is untrusted. It
// never throws and never crashes: true, or false with an error naming the file. And what it reads is
// what the merge reports: written again as the helper writes it (to_json of the verdict and node_stats)
// and read back, the same verdict, the same node_stats, and no type problem.
#include <unistd.h>

#include <fstream>

#include "libstallscope/job/verdict_file.h"
#include "libstallscope/timeline/documents.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

namespace {

std::string dump(const Json& j) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// One file per process, rewritten for every input.
const std::string& scratch_path() {
    static const std::string path = stallscope::fuzz::scratch_path("stallscope-fuzz-verdict", ".json");
    return path;
}

bool read_text(std::string_view text, VerdictFile& out, std::string& error) {
    {
        std::ofstream file(scratch_path(), std::ios::binary | std::ios::trunc);
        file.write(text.data(), static_cast<std::streamsize>(text.size()));
        FUZZ_CHECK(file.good());
    }
    return read_verdict_file(scratch_path(), out, error);
}

// Written again by the helper's own writer (verdict_document), from what was read: the identity fields
// the merge uses as a header, the verdict, the warnings and node_stats.
Json document(const VerdictFile& v) {
    const Json header{{"host", v.host},
                      {"step_id", v.step_id},
                      {"job_id", v.job_id},
                      {"user", v.user},
                      {"job_name", v.job_name}};
    return verdict_document(header, v.verdict, "", v.warnings, v.stats ? to_json(*v.stats) : Json());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    VerdictFile first;
    std::string error;
    const bool read = read_text(fuzz::as_text(data, size), first, error);
    FUZZ_CHECK(read || !error.empty());
    if (!read) return 0;

    const std::string written = dump(document(first));
    VerdictFile second;
    std::string again;
    FUZZ_CHECK(read_text(written, second, again));
    if (!second.problems.empty()) std::fprintf(stderr, "problem: %s\n", second.problems.front().c_str());
    FUZZ_CHECK(second.problems.empty());
    const std::string verdict_once = dump(to_json(first.verdict)),
                      verdict_twice = dump(to_json(second.verdict));
    if (verdict_once != verdict_twice)
        std::fprintf(stderr, "verdict read\n %s\nread again\n %s\n", verdict_once.c_str(),
                     verdict_twice.c_str());
    FUZZ_CHECK(verdict_once == verdict_twice);
    FUZZ_CHECK(first.stats.has_value() == second.stats.has_value());
    if (first.stats) FUZZ_CHECK(dump(to_json(*first.stats)) == dump(to_json(*second.stats)));
    FUZZ_CHECK(dump(document(first)) == dump(document(second)));
    ::unlink(scratch_path().c_str());
    return 0;
}
