// visit_timeline_fd on arbitrary file contents (a torn or hand-edited timeline), then the replay path on what
// it read: the same Profiler the helper runs live, its verdict, and the verdict's JSON.
#include <sys/mman.h>
#include <unistd.h>

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
    struct Replay final : TimelineVisitor {
        Profiler profiler{Thresholds{}};
        void sample(Snapshot&& snapshot) override { profiler.observe(std::move(snapshot)); }
    } replay;
    std::vector<std::string> warnings;
    std::string error;
    const bool read = visit_timeline_fd(fd, "fuzz-input", replay, warnings, error);
    FUZZ_CHECK(read || !error.empty());
    FUZZ_CHECK(warnings.size() <= kMaxWarnings + 1);
    Profiler& profiler = replay.profiler;
    const StepVerdict verdict = profiler.verdict();
    (void)to_json(verdict).dump();  // as replay_timeline() compares it: throws on invalid UTF-8
    return 0;
}
