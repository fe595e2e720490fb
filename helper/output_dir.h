// Where the helper writes: the requested directory, or a private fallback when that is not writable
// (read-only or full project dir). The job never fails because of it; the verdict says what happened.
#pragma once

#include <string>

namespace stallscope::cli {

struct OutputDir {
    std::string path;
    std::string warning;  // set when the fallback was used, saying why
};

// Tries `requested`: creates its last component only (a missing parent is an error, never created,
// root included), or accepts an existing real directory (lstat: never a symlink) owned by us and not
// writable by group or others; then a write probe. Otherwise falls back to $TMPDIR or /tmp:
// <tmp>/stallscope-<uid>/<basename(requested)>, where stallscope-<uid> must be a real directory owned by
// us with mode 0700 (never follow a symlink planted in /tmp), and says why on stderr and in warning.
// Empty path when both fail.
OutputDir choose_output_dir(const std::string& requested);

// Only the fallback, for a directory that went bad during the step (disk full); `why` completes
// "output dir <requested> ..." in the warning.
OutputDir fallback_output_dir(const std::string& requested, const std::string& why);

// File-name-safe form of a step id or host name: [A-Za-z0-9._-], anything else becomes '_'.
std::string file_name_part(const std::string& text);

}  // namespace stallscope::cli
