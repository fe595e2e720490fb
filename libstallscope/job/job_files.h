// The job directories a report reads, listed with bounds: the files a job writes are untrusted, so
// listing them must cost a bounded amount whatever the job put there (hard links, millions of names).
// Reading each file is verdict_file.h's (bounded too) and replay_timeline.h's business.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace stallscope {

// The most entries a listing of a job directory reads (find_recordings, hosts_without_verdict).
inline constexpr std::size_t kMaxDirectoryEntries = 1u << 20;
// The most recordings taken from one directory (a 16 000-node job with 4 steps is 64 000).
inline constexpr std::size_t kMaxRecordingsPerDirectory = 1u << 16;

// The files of one recording, paired by their <step>.<host> stem.
struct RecordingFiles {
    std::string verdict, timeline;
    std::string stem;  // <step>.<host>, "" for a file named otherwise
};

// Directories: their verdict.*.json and timeline.* files, paired by stem (a timeline is only ever the
// one next to its verdict). Files: verdict.*.json as a verdict, anything else as a timeline. Each regular
// file is taken once whatever its names; at most kMaxRecordingsPerDirectory recordings per directory
// out of at most kMaxDirectoryEntries entries. What is left out, and inputs that are not there, become
// warnings.
std::map<std::string, RecordingFiles> find_recordings(const std::vector<std::string>& inputs,
                                                      std::vector<std::string>& warnings);

std::string base_name(const std::string& path);

}  // namespace stallscope
