#include "libstallscope/sources/kmsg/kmsg_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/kmsg/xid_parser.h"
#include "libstallscope/sources/nvml/pci_bus_id.h"

namespace stallscope {

namespace {

constexpr std::size_t kMaxBytesPerSample = 1 << 20;  // a log storm costs at most this much per sample
constexpr std::size_t kRecordBuffer = 8192;          // /dev/kmsg refuses (EINVAL) reads smaller than a record

class KmsgSource final : public Source {
  public:
    // Opens `path` now, so that "the start of the run" for /dev/kmsg is when the source was made.
    explicit KmsgSource(std::string path) : label_(std::move(path)) {
        fd_ = ::open(label_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd_ < 0) {
            const int err = errno;
            open_error_ = (err == EPERM || err == EACCES)
                              ? label_ + ": kmsg not readable (dmesg_restrict?): Xid detection off"
                              : label_ + ": " + std::strerror(err) + ": Xid detection off";
            return;
        }
        classify_fd();
        if (record_mode_) ::lseek(fd_, 0, SEEK_END);  // only Xids from now on
    }
    KmsgSource(int fd, std::string label) : label_(std::move(label)), fd_(fd) {
        if (fd_ < 0) {
            open_error_ = label_ + ": no kmsg fd: Xid detection off";
            return;
        }
        classify_fd();
        if (fd_ >= 0 && !record_mode_) {
            const off_t position = ::lseek(fd_, 0, SEEK_CUR);
            offset_ = position > 0 ? static_cast<std::uint64_t>(position) : 0;
        }
    }
    ~KmsgSource() override {
        if (fd_ >= 0) ::close(fd_);
    }
    KmsgSource(const KmsgSource&) = delete;
    KmsgSource& operator=(const KmsgSource&) = delete;

    std::string_view name() const override { return "kmsg"; }

    void sample(Snapshot& snapshot) override {
        if (fd_ < 0) {
            if (!open_error_.empty()) snapshot.warnings.push_back(std::move(open_error_));
            open_error_.clear();  // once per run
            return;
        }
        lines_.clear();
        if (record_mode_) {
            read_records(snapshot);
        } else {
            read_appended(snapshot);
        }
        for (const auto& line : lines_) {
            if (auto xid = parse_xid_line(line)) add_event(std::move(*xid), snapshot);
        }
    }

  private:
    void classify_fd() {
        struct stat st {};
        if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
            record_mode_ = false;
        } else if (::fstat(fd_, &st) == 0 && S_ISCHR(st.st_mode)) {
            record_mode_ = true;
        } else {
            open_error_ = label_ + ": neither /dev/kmsg nor a regular file: Xid detection off";
            ::close(fd_);
            fd_ = -1;
        }
    }

    // /dev/kmsg: each read returns one record "prio,seq,usec,flags;text\n" plus optional " KEY=value"
    // continuation lines; only the first line is the message.
    void read_records(Snapshot& snapshot) {
        std::size_t total = 0;
        bool overrun = false;
        while (total < kMaxBytesPerSample) {
            const ssize_t n = ::read(fd_, buffer_, sizeof buffer_);
            if (n > 0) {
                total += static_cast<std::size_t>(n);
                std::string_view record(buffer_, static_cast<std::size_t>(n));
                lines_.emplace_back(record.substr(0, record.find('\n')));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            // EPIPE: the ring buffer overwrote records we had not read yet; the next read continues with the
            // oldest record still there.
            if (n < 0 && errno == EPIPE) {
                overrun = true;
                continue;
            }
            if (n < 0 && errno != EAGAIN) {
                snapshot.warnings.push_back(label_ + ": read failed: " + std::strerror(errno));
            }
            break;  // EAGAIN: caught up
        }
        if (overrun)
            snapshot.warnings.push_back(label_ +
                                        ": kernel log overran between samples; some Xid lines may be lost");
        if (total >= kMaxBytesPerSample)
            snapshot.warnings.push_back(label_ +
                                        ": more than 1 MiB of kernel log this sample; rest read next sample");
    }

    // A regular file (fixture or a saved dmesg): the complete lines appended since the last sample. A
    // line without its newline yet is left for the next sample; a file that shrank is read again from 0.
    void read_appended(Snapshot& snapshot) {
        struct stat st {};
        if (::fstat(fd_, &st) != 0) {
            snapshot.warnings.push_back(label_ + ": fstat failed: " + std::strerror(errno));
            return;
        }
        const auto size = static_cast<std::uint64_t>(st.st_size);
        if (size < offset_) offset_ = 0;  // truncated or replaced: start over
        std::size_t want =
            static_cast<std::size_t>(std::min<std::uint64_t>(size - offset_, kMaxBytesPerSample));
        if (want == 0) return;
        text_.resize(want);
        std::size_t got = 0;
        while (got < want) {
            const ssize_t n = ::pread(fd_, text_.data() + got, want - got, static_cast<off_t>(offset_ + got));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        text_.resize(got);
        std::size_t end = text_.rfind('\n');
        if (end == std::string::npos) {
            if (got < kMaxBytesPerSample) return;  // partial line: wait for its newline
            end = got - 1;                         // one giant "line": skip it
            snapshot.warnings.push_back(label_ + ": line longer than 1 MiB skipped");
        } else if (got == kMaxBytesPerSample && size - offset_ > got) {
            snapshot.warnings.push_back(label_ +
                                        ": more than 1 MiB of new log this sample; rest read next sample");
        }
        offset_ += end + 1;
        std::string_view view(text_.data(), end + 1);
        while (!view.empty()) {
            const auto newline = view.find('\n');
            lines_.emplace_back(view.substr(0, newline));
            view.remove_prefix(newline == std::string_view::npos ? view.size() : newline + 1);
        }
    }

    void add_event(XidLine xid, Snapshot& snapshot) {
        XidEvent event;
        event.code = xid.code;
        event.pci_bus_id = std::move(xid.pci_bus_id);
        event.severity = classify_xid(xid.code);
        event.message = std::move(xid.message);
        for (auto& gpu : snapshot.gpus) {
            if (!gpu.pci_bus_id.empty() && same_pci_device(gpu.pci_bus_id, event.pci_bus_id)) {
                event.gpu_index = gpu.index;
                event.pci_bus_id = gpu.pci_bus_id;
                gpu.xid.push_back(event.code);
                break;
            }
        }
        // Unmatched Xids stay with gpu_index -1: another job's GPU (hidden by ConstrainDevices) or a GPU no
        // GPU source could see. The rules decide what a node-level Xid means for this job.
        snapshot.xid_events.push_back(std::move(event));
    }

    std::string label_;
    int fd_ = -1;
    bool record_mode_ = true;
    std::string open_error_;
    std::uint64_t offset_ = 0;  // regular-file mode: bytes already consumed
    std::string text_;          // regular-file mode read buffer, reused
    std::vector<std::string> lines_;
    char buffer_[kRecordBuffer];
};

}  // namespace

std::unique_ptr<Source> make_kmsg_source(const Roots& roots) {
    return std::make_unique<KmsgSource>(roots.dev + "/kmsg");
}

std::unique_ptr<Source> make_kmsg_source_from_fd(int fd, std::string label) {
    return std::make_unique<KmsgSource>(fd, std::move(label));
}

}  // namespace stallscope
