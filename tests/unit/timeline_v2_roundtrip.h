// write_then_read: snapshots through TimelineWriter (v2) into a file and back through read_timeline,
// shared by the v2 round-trip tests.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "libstallscope/timeline/documents.h"
#include "libstallscope/timeline/snapshot_diff.h"
#include "libstallscope/timeline/timeline.h"

namespace stallscope::test {

// A file's bytes, whole (empty when it cannot be read).
inline std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

// The samples as read back (REQUIREs that writing and reading succeed and the file is v2); the reader's
// warnings into `warnings`; a new frame every `per_frame` samples when not 0.
inline std::vector<Snapshot> write_then_read(const std::vector<Snapshot>& samples, const std::string& path,
                                             std::vector<std::string>* warnings = nullptr,
                                             int per_frame = 0) {
    REQUIRE(!samples.empty());  // the header is the first sample's, and an empty round trip proves nothing
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
    CHECK(c.header["schema"] == kTimelineSchemaV3);
    if (warnings) *warnings = c.warnings;
    return c.samples;
}

// Each sample's record from the per-part writer, CHECKed equal to the whole-tree comparison's
// (append_record(to_json(sample))); both writers start a new frame after sample `reset_after`.
inline std::vector<std::string> records_by_part_checked(
    const std::vector<Snapshot>& samples, std::size_t reset_after = static_cast<std::size_t>(-1)) {
    REQUIRE(!samples.empty());
    SnapshotDiffEncoder by_part, whole;
    std::vector<std::string> records;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        CAPTURE(i);
        std::string a, b;
        by_part.append_record(samples[i], a);
        whole.append_record(to_json(samples[i]), b);
        CHECK(a == b);
        records.push_back(std::move(a));
        if (i == reset_after) {
            by_part.reset();
            whole.reset();
        }
    }
    return records;
}

}  // namespace stallscope::test
