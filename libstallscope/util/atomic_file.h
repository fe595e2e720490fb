// Replacing files atomically and making directories: the one implementation used for verdicts,
// summaries and the Prometheus textfile.
#pragma once

#include <string>
#include <string_view>

namespace stallscope {

// Writes a temp file in the target's directory, then rename(2)s it over the target, so a reader (a user,
// node_exporter's textfile collector) sees the old or the new content, never a torn one. The temp name is
// `.<basename>.<pid>.tmp`: hidden and not `*.prom`, so the textfile collector never reads a half-written
// file. Created with O_NOFOLLOW, mode 0644 regardless of umask (node_exporter runs as another user).
// `sync` adds fsync(2) before the rename (verdicts: yes; a textfile rewritten every interval: no). On
// failure the temp file is removed and `error` names the path and the reason.
bool write_file_atomically(const std::string& path, std::string_view data, bool sync, std::string& error);

// The temp name write_file_atomically uses for `path` (to clean up after a crash).
std::string atomic_temp_path(const std::string& path);

}  // namespace stallscope
