// read_timeline on arbitrary file contents (a torn or hand-edited timeline), then the replay path on what
// it read: the same Profiler the helper runs live, its verdict, and the verdict's JSON.
#include <sys/mman.h>
#include <unistd.h>

#include "libstallscope/rules/profiler.h"
#include "libstallscope/timeline/timeline.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

namespace {

// One in-memory file per process, rewritten for every input (read_timeline takes a path).
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
    const std::string path = "/proc/self/fd/" + std::to_string(fd);

    TimelineContents contents;
    std::string error;
    FUZZ_CHECK(read_timeline(path, contents, error));

    Profiler profiler{Thresholds{}};
    for (const auto& snapshot : contents.samples) profiler.observe(snapshot);
    const StepVerdict verdict = profiler.verdict();
    (void)to_json(verdict).dump();  // as replay_timeline() compares it: throws on invalid UTF-8
    return 0;
}
