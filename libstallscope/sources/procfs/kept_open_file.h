// A /proc text file kept open across samples and re-read whole with pread, into a buffer that grows to
// the file's size once and is then reused: per sample no open/close and no allocation
// (node-health-anchors.md section 9.1: pread on a kept fd halves the cost of /proc reads).
//
// Unlike CounterFile (fixed 256 bytes, one pread), this handles files of any size: seq_file hands out at
// most about a page per read, so it preads at increasing offsets until a read returns 0.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

class KeptOpenFile {
  public:
    explicit KeptOpenFile(std::string path, std::size_t max_bytes = 4u << 20);
    KeptOpenFile(KeptOpenFile&& other) noexcept;
    KeptOpenFile& operator=(KeptOpenFile&& other) noexcept;
    KeptOpenFile(const KeptOpenFile&) = delete;
    KeptOpenFile& operator=(const KeptOpenFile&) = delete;
    ~KeptOpenFile();

    const std::string& path() const { return path_; }

    // The whole file (at most max_bytes; longer text is cut there) or nullopt with `error` set to a human
    // reason. Opens lazily; after a failure the fd is closed so a file that reappears is found again.
    // The view stays valid until the next read().
    std::optional<std::string_view> read(std::string& error);

  private:
    void close_fd() noexcept;
    std::string path_;
    std::size_t max_bytes_;
    int fd_ = -1;
    std::vector<char> buffer_;
};

}  // namespace stallscope
