#pragma once

#include <string>
#include <string_view>

namespace stallscope {

// Writes `content` to `path` through a temp file in the same directory + fsync + rename, so readers see
// the old file or the new one, never a torn one. The temp file is created O_EXCL|O_NOFOLLOW with mode
// 0644 (0644 & ~umask). Returns false and sets `error` on failure; the temp file is removed then.
bool write_file_atomically(const std::string& path, std::string_view content, std::string& error);

// mkdir -p with mode 0755 (& ~umask). Returns false and sets `error` naming the component that failed.
bool make_directories(const std::string& path, std::string& error);

}  // namespace stallscope
