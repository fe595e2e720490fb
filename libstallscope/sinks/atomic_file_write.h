// Replace a file atomically: write a temp file in the same directory, then rename(2) over the target, so
// a reader (node_exporter's textfile collector) sees either the old or the new content, never a torn one.
#pragma once

#include <string>
#include <string_view>

namespace stallscope {

// The temp name is `.<basename>.<pid>.tmp` in the target's directory: hidden and not `*.prom`, so the
// textfile collector never reads a half-written file. Mode 0644 regardless of umask (node_exporter runs
// as another user). `sync` adds fsync(2) before the rename; off for the per-sample textfile (see
// prometheus_textfile.h). On failure the temp file is removed and `error` names the path and errno.
bool write_file_atomically(const std::string& path, std::string_view data, bool sync, std::string& error);

std::string atomic_temp_path(const std::string& path);

}  // namespace stallscope
