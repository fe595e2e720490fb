// write_then_read: snapshots through TimelineWriter (v2) into a file and back through read_timeline,
// shared by the v2 round-trip tests.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/timeline.h"

namespace stallscope::test {

// The samples as read back (REQUIREs that writing and reading succeed and the file is v2); the reader's
// warnings into `warnings`; a new frame every `per_frame` samples when not 0.
inline std::vector<Snapshot> write_then_read(const std::vector<Snapshot>& samples, const std::string& path,
                                             std::vector<std::string>* warnings = nullptr,
                                             int per_frame = 0) {
    {
        TimelineWriter w(TimelineFormat::zstd_v2);
        if (per_frame) w.set_samples_per_frame(per_frame);
        std::string error;
        REQUIRE(w.open(path, error));
        REQUIRE(w.write_header(timeline_header(samples.front(), 1.0, {}), error));
        for (const auto& s : samples) REQUIRE(w.append_sample(s, Profile{}, error));
    }
    TimelineContents c;
    std::string error;
    REQUIRE_MESSAGE(read_timeline(path, c, error), error);
    CHECK(c.header["schema"] == kTimelineSchemaV2);
    if (warnings) *warnings = c.warnings;
    return c.samples;
}

}  // namespace stallscope::test
