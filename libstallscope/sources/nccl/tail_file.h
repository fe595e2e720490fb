// Follows a growing text file (Inspector JSONL, NCCL debug file, PyTorch log) by byte offset: bounded
// bytes per read, complete lines only (a torn last line waits for its newline), truncation and
// replacement (inode change) restart from the beginning.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stallscope::nccl {

class TailFile {
  public:
    // `backlog`: on first sight, start this many bytes before the end (skipping the cut first line), so
    // a huge file from before the helper started costs at most that much.
    TailFile(std::string path, std::size_t backlog);

    // Appends up to `max_bytes` worth of new complete lines to `lines`. Returns "" or an error text.
    std::string read_lines(std::size_t max_bytes, std::vector<std::string>& lines);
    const std::string& path() const { return path_; }
    std::uint64_t offset() const { return offset_; }

  private:
    std::string path_;
    std::size_t backlog_;
    bool started_ = false, skip_first_ = false;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
    std::uint64_t offset_ = 0;
    std::string partial_;
};

}  // namespace stallscope::nccl
