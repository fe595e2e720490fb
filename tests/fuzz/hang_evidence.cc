// The hang capture's other parsers: /proc task stat lines, the rank and flight-recorder variables of an
// environ block, cgroup.procs, and an evidence file read back by the job merge (then name_culprit on it).
#include "libstallscope/hang/culprit.h"
#include "libstallscope/hang/flight_recorder_trigger.h"
#include "libstallscope/hang/hang_merge.h"
#include "libstallscope/hang/proc_threads.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    if (const auto s = parse_task_stat(text)) FUZZ_CHECK(s->comm.size() <= 64);
    const RankIdentity id = rank_from_environ(text);
    FUZZ_CHECK(id.rank >= -1 && id.local_rank >= -1);
    (void)flight_recorder_paths_from_environ(text);
    FUZZ_CHECK(parse_cgroup_procs(text, 16).size() <= 16);
    (void)parse_rank_list(text, 64);

    const Json doc = Json::parse(text, nullptr, false);
    if (!doc.is_discarded()) {
        HangEvidence evidence;
        std::vector<std::string> problems;
        add_evidence_document(doc, evidence, problems);
        add_evidence_document(doc, evidence,
                              problems);  // a second node quoting the same: merged, not doubled
        const HangFinding f = name_culprit(evidence);
        FUZZ_CHECK(!f.line.empty());
        FUZZ_CHECK((f.kind == HangFindingKind::culprit) == (f.sources.size() >= 2));
        for (const auto& w : problems) FUZZ_CHECK(!w.empty());
    }
    return 0;
}
