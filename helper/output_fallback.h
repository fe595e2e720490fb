// What the helper does when its output directory goes bad during the step (disk or quota full, I/O
// error): move the timeline to the private fallback directory (output_dir.h) and go on there, and write
// the verdict there when the directory refuses it. Nothing already flushed is lost; the verdict's
// warnings and the job comment's file= say where everything went.
#pragma once

#include <string>
#include <vector>

#include "libstallscope/timeline/timeline.h"

namespace stallscope::cli {

// Copies the timeline's complete lines (a line torn by the failed write is dropped) to the fallback
// directory for `requested_dir`, removes the original (giving the space back), and reopens `timeline`
// on the copy. On success sets *dir to the fallback directory. Either way returns the warning to record.
bool relocate_timeline(TimelineWriter& timeline, const std::string& requested_dir, const std::string& why,
                       std::string* dir, std::string* warning);

// Copies `from` up to and including its last '\n' to `to` (created 0644, truncated, never through a
// symlink) and syncs it. False + error on any failure.
bool copy_complete_lines(const std::string& from, const std::string& to, std::string& error);

}  // namespace stallscope::cli
