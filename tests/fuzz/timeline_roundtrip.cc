// What the helper writes comes back as it was: any sequence of snapshots (the input's lines, each a JSON
// object read with snapshot_from_json) written by TimelineWriter, v2 (change records, a new zstd frame
// every few samples) and v1, and read back by visit_timeline, gives every sample again, field for field,
// with no warning. The other targets feed the reader damaged files; this one feeds the writer odd samples
// (fields appearing and vanishing, lists growing and shrinking, numbers at the edges of their types), where
// a bug in the change records would lose data silently in every recording. And `stallscope replay` of
// what was read reaches the verdict the helper reached live: replay profiles a lent sample with no previous
// one kept (Profiler::observe_view_for_verdict), the helper hands over each sample and keeps the last
// (Profiler::observe), and a recorded verdict must come back byte for byte.
#include <unistd.h>

#include <string>
#include <vector>

#include "libstallscope/rules/profiler.h"
#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/timeline.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/snapshot_lines.h"

using namespace stallscope;

namespace {

constexpr std::size_t kMaxSamples = 64;

std::string dump(const Snapshot& s) {
    return to_json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string dump(const StepVerdict& v) {
    return to_json(v).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// What was read, and the verdict replay reaches on it (as libstallscope/job/replay_timeline.cc profiles).
struct Collect final : TimelineVisitor {
    std::vector<std::string> samples;
    Profiler replay{Thresholds{}};
    void sample(Snapshot&& snapshot) override { sample_view(snapshot); }
    void sample_view(const Snapshot& snapshot) override {
        samples.push_back(dump(snapshot));
        replay.observe_view_for_verdict(snapshot);
    }
};

// The samples as `format` stores them, read back (both read modes for v2).
void check_round_trip(const std::vector<Snapshot>& samples, const std::vector<std::string>& expected,
                      const std::string& live_verdict, TimelineFormat format, int per_frame) {
    // One file per process, rewritten for every input (the writer refuses symlinks and appends).
    const std::string path = fuzz::scratch_path("stallscope-fuzz-roundtrip", timeline_suffix(format));
    ::unlink(path.c_str());
    std::string error;
    {
        TimelineWriter writer(format);
        writer.set_samples_per_frame(per_frame);
        FUZZ_CHECK(writer.open(path, error));
        FUZZ_CHECK(writer.write_header(timeline_header(samples.front(), 1.0, {}), error));
        for (const Snapshot& s : samples) FUZZ_CHECK(writer.append_sample(s, Profile{}, error));
    }
    for (const bool whole : {false, true}) {
        if (whole && format != TimelineFormat::zstd_v2) continue;
        Collect read;
        std::vector<std::string> warnings;
        TimelineReadLimits limits;
        limits.whole_samples = whole;
        const bool ok = visit_timeline(path, read, warnings, error, limits);
        if (!ok || !warnings.empty() || read.samples != expected) {
            std::fprintf(stderr, "format %s, whole %d, %zu samples written, %zu read, error '%s'\n",
                         timeline_suffix(format), whole, expected.size(), read.samples.size(), error.c_str());
            for (const auto& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
            for (std::size_t i = 0; i < expected.size() && i < read.samples.size(); ++i)
                if (read.samples[i] != expected[i])
                    std::fprintf(stderr, "sample %zu\n written %s\n read    %s\n", i, expected[i].c_str(),
                                 read.samples[i].c_str());
        }
        FUZZ_CHECK(ok);
        FUZZ_CHECK(warnings.empty());
        FUZZ_CHECK(read.samples == expected);
        const std::string replayed = dump(read.replay.verdict());
        if (replayed != live_verdict)
            std::fprintf(stderr, "verdict live\n %s\nreplayed\n %s\n", live_verdict.c_str(),
                         replayed.c_str());
        FUZZ_CHECK(replayed == live_verdict);
    }
    ::unlink(path.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<Snapshot> samples;
    std::vector<std::string> expected;
    for (fuzz::SnapshotLine& line : fuzz::snapshot_lines(fuzz::as_text(data, size), kMaxSamples)) {
        samples.push_back(std::move(line.snapshot));
        expected.push_back(dump(samples.back()));
    }
    if (samples.empty()) return 0;
    Profiler live{Thresholds{}};  // as the helper profiles (helper/cli_record.cc)
    for (const Snapshot& s : samples) live.observe(Snapshot(s));
    const std::string live_verdict = dump(live.verdict());
    // A new frame (header and a full sample again) every 1-4 samples: the reader's restart path too.
    const int per_frame = 1 + static_cast<int>(size % 4);
    check_round_trip(samples, expected, live_verdict, TimelineFormat::zstd_v2, per_frame);
    check_round_trip(samples, expected, live_verdict, TimelineFormat::jsonl_v1, per_frame);
    return 0;
}
