// Replacing files atomically and making directories: the one implementation used for verdicts,
// summaries and the Prometheus textfile.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace stallscope {

enum class FileMode {
    follow_umask,    // 0666 & ~umask: the job's umask decides who reads its verdicts and summaries
    world_readable,  // 0644 whatever the umask: the Prometheus textfile (node_exporter runs as another user)
};

// Writes a temp file in the target's directory, then renames it over the target, so a reader (a user,
// node_exporter's textfile collector) sees the old or the new content, never a torn one. The temp name is
// `.<basename>.<pid>.tmp`: hidden and not `*.prom`, so the textfile
// collector never reads a half-written file.
// Everything is done by descriptor, because the directory may belong to someone else (an admin writing
// `report --html` into a job directory as root): the directory is opened component by component with
// O_NOFOLLOW, following a symlink only when root or we own it (so a user cannot swap a component of
// their own for a symlink to elsewhere); the temp file is created there with O_EXCL|O_NOFOLLOW (never an
// existing file, so never a file someone else pre-created: the write fails instead) and renamed within that
// directory (renameat). `sync` adds fsync(2) before the rename (verdicts: yes; a textfile rewritten every
// interval: no). On failure the temp file is removed and `error` names the path and the reason.
bool write_file_atomically(const std::string& path, std::string_view data, bool sync, std::string& error,
                           FileMode mode = FileMode::follow_umask);

// The same, with the content produced piece by piece: `produce` calls `write` with each piece in order,
// so a file larger than what the caller wants to hold (a 16 000-node job's summary.json: ~110 MB) never
// sits in memory whole. After a failed write, further writes are dropped and the file is not renamed.
using AtomicWrite = std::function<void(std::string_view piece)>;
bool write_file_atomically(const std::string& path,
                           const std::function<void(const AtomicWrite& write)>& produce, bool sync,
                           std::string& error, FileMode mode = FileMode::follow_umask);

// The temp name write_file_atomically uses for `path` (to clean up after a crash).
std::string atomic_temp_path(const std::string& path);

}  // namespace stallscope
