// The periodic `--json` line has two writers that must give the same bytes: the text written straight
// from the structs (append_sample_line_json, what the CLI prints every sample) and nlohmann's dump() of
// the tree (sample_line_to_json, the reference). The unit test holds them together on the fixture nodes and
// scenarios; here any snapshots do (the input's lines, each a JSON object read with snapshot_from_json),
// profiled one after another as the CLI profiles them, so the rates and the profile's reasons vary too:
// odd strings, numbers at the edges of their types, empty and missing parts.
#include <string>
#include <vector>

#include "libstallscope/model/snapshot_json_text.h"
#include "libstallscope/rules/profiler.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/snapshot_lines.h"

using namespace stallscope;

namespace {

constexpr std::size_t kMaxSamples = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Profiler profiler{Thresholds{}};
    std::size_t samples = 0;
    std::string line_text;
    for (const fuzz::SnapshotLine& line : fuzz::snapshot_lines(fuzz::as_text(data, size), kMaxSamples)) {
        const Snapshot& snapshot = line.snapshot;
        const std::vector<std::string>& problems = line.problems;
        ++samples;
        // As helper/cli_sample.cc: the profile of this sample, the rates against the previous one.
        const Profile profile = profiler.observe(snapshot);
        // Every other sample carries the context the CLI adds for a job found in another process.
        Json more_context = Json::object();
        more_context["detected_from"] = "another process's environment";
        more_context["detected_from_pid"] = static_cast<long>(samples);
        const SampleLine sample{snapshot, profiler.last_rates(), profile, problems,
                                samples % 2 ? &more_context : nullptr};
        line_text.clear();
        if (!append_sample_line_json(line_text, sample))
            continue;  // it said it cannot: the CLI uses the tree
        const std::string reference = sample_line_to_json(sample).dump();
        if (line_text != reference) {
            std::size_t at = 0;
            while (at < line_text.size() && at < reference.size() && line_text[at] == reference[at]) ++at;
            const std::size_t from = at > 80 ? at - 80 : 0;
            std::fprintf(stderr, "sample %zu differs at byte %zu\n text %s\n tree %s\n", samples, at,
                         line_text.substr(from, 160).c_str(), reference.substr(from, 160).c_str());
        }
        FUZZ_CHECK(line_text == reference);
    }
    return 0;
}
