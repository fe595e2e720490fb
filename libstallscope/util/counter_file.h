// A sysfs/procfs file kept open across samples and re-read with pread: the per-sample cost is one
// syscall, no open/close, no allocation (dynolog's SysfsCounter, node-health-anchors.md section 9).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

class CounterFile {
  public:
    CounterFile() = default;
    explicit CounterFile(std::string path);
    CounterFile(CounterFile&& other) noexcept;
    CounterFile& operator=(CounterFile&& other) noexcept;
    CounterFile(const CounterFile&) = delete;
    CounterFile& operator=(const CounterFile&) = delete;
    ~CounterFile();

    const std::string& path() const { return path_; }

    // Reads the whole file (up to the buffer size) from offset 0 into `buffer`. Opens lazily on first
    // use. Returns the text or nullopt with `error` set to a human reason ("No such file or directory").
    // Files whose read fails with EINVAL/EOPNOTSUPP/EACCES/EIO are marked `unsupported`: the mlx5
    // ACCESS_REG case, where every read attempt logs to dmesg, so callers must stop re-reading them.
    std::optional<std::string_view> read(std::string& error);
    bool unsupported() const { return unsupported_; }

  private:
    void close_fd() noexcept;
    std::string path_;
    int fd_ = -1;
    bool unsupported_ = false;
    char buffer_[256];  // sysfs counters are < 32 bytes; longer text is garbage and still reported
};

// Reads a small text file in one go (open + read + close) for values read once per run, or for files
// like /proc/net/dev whose size varies. Returns nullopt and sets `error` on failure. `max_bytes` bounds
// memory on garbage input.
std::optional<std::string> read_text_file(const std::string& path, std::string& error,
                                          std::size_t max_bytes = 1 << 20);

// A sysfs attribute read once (vendor, unique_id, link_layer, ...): its text without surrounding blanks, at
// most 4 KiB; "" when it cannot be read.
std::string read_attribute_text(const std::string& path);

// A directory's entry names but "." and "..", in byte order; nullopt when it cannot be opened.
std::optional<std::vector<std::string>> directory_entries(const std::string& path);

}  // namespace stallscope
