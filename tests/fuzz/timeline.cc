// visit_timeline_fd on arbitrary file contents (a torn or hand-edited timeline), then the replay path on what
// it read: the same Profiler the helper runs live, its verdict, and the verdict's JSON. And the v2 reader's
// shortcuts (a change record's numbers placed in the kept sample, only touched fields re-read) against
// reading every sample whole from the decoded tree: the same samples and warnings, whatever the records.
// And replay's own path (the lent sample profiled under the reader's shape promise, the rates read
// through kept pointers) against profiling a copy of each sample: the same verdict.
#include <sys/mman.h>
#include <unistd.h>

#include "libstallscope/model/rates_tracker.h"
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/rules/profiler.h"
#include "libstallscope/timeline/timeline.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

namespace {

// One in-memory file per process, rewritten for every input.
int timeline_fd() {
    static const int fd = ::memfd_create("stallscope-fuzz-timeline", MFD_CLOEXEC);
    return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int fd = timeline_fd();
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(::ftruncate(fd, 0) == 0);
    FUZZ_CHECK(::pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
    FUZZ_CHECK(::lseek(fd, 0, SEEK_SET) == 0);

    // v1 and v2 (zstd) alike; "not a stallscope timeline" is a valid answer, a crash or a leak is not.
    // Each sample's JSON as read; and, when given a profiler, the replay path on it.
    struct Collect final : TimelineVisitor {
        Profiler* profiler = nullptr;
        std::vector<std::string> samples;
        void sample(Snapshot&& snapshot) override {
            samples.push_back(to_json(snapshot).dump(-1, ' ', false, Json::error_handler_t::replace));
            if (profiler) profiler->observe(std::move(snapshot));
        }
    };
    Profiler profiler{Thresholds{}};
    Collect replay;
    replay.profiler = &profiler;
    std::vector<std::string> warnings;
    std::string error;
    const bool read = visit_timeline_fd(fd, "fuzz-input", replay, warnings, error);
    FUZZ_CHECK(read || !error.empty());
    FUZZ_CHECK(warnings.size() <= kMaxWarnings + 1);
    const StepVerdict verdict = profiler.verdict();
    (void)to_json(verdict).dump();  // throws on invalid UTF-8: the reader must let none through

    // As replay profiles: the lent sample, under the reader's SnapshotShape. And the rates the shape
    // lets a tracker take (kept pointers, only the counters "keys" names) against compute_rates on
    // copies of the samples: the reader's promise checked on every record.
    struct Lent final : TimelineVisitor {
        Profiler profiler{Thresholds{}};
        RatesTracker tracker;
        std::optional<Snapshot> previous;
        void sample(Snapshot&& snapshot) override { profiler.observe_view_for_verdict(snapshot); }
        void sample_lent(const Snapshot& snapshot, SnapshotShape shape) override {
            profiler.observe_view_for_verdict(snapshot, shape);
            const Rates* rates = tracker.update(snapshot, shape);
            if (previous) {
                FUZZ_CHECK(rates != nullptr);
                const auto text = [](const Rates& r) {
                    return to_json(r).dump(-1, ' ', false, Json::error_handler_t::replace);
                };
                FUZZ_CHECK(text(*rates) == text(compute_rates(*previous, snapshot)));
            }
            previous = snapshot;
        }
    } lent;
    std::vector<std::string> lent_warnings;
    std::string lent_error;
    FUZZ_CHECK(::lseek(fd, 0, SEEK_SET) == 0);
    FUZZ_CHECK(visit_timeline_fd(fd, "fuzz-input", lent, lent_warnings, lent_error) == read);
    FUZZ_CHECK(to_json(lent.profiler.verdict()).dump(-1, ' ', false, Json::error_handler_t::replace) ==
               to_json(verdict).dump(-1, ' ', false, Json::error_handler_t::replace));

    Collect whole;
    TimelineReadLimits whole_samples;
    whole_samples.whole_samples = true;
    std::vector<std::string> whole_warnings;
    std::string whole_error;
    FUZZ_CHECK(::lseek(fd, 0, SEEK_SET) == 0);
    FUZZ_CHECK(visit_timeline_fd(fd, "fuzz-input", whole, whole_warnings, whole_error, whole_samples) ==
               read);
    FUZZ_CHECK(whole_error == error);
    FUZZ_CHECK(whole_warnings == warnings);
    FUZZ_CHECK(whole.samples == replay.samples);
    return 0;
}
