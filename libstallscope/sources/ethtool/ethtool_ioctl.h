// The SIOCETHTOOL ioctl for NIC statistics (what `ethtool -S` does, without forking it):
// ETHTOOL_GSSET_INFO (how many) -> ETHTOOL_GSTRINGS (names, once) -> ETHTOOL_GSTATS (values, per sample),
// all on one datagram socket kept open for the life of the source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stallscope {

enum class EthtoolStatus {
    ok,
    unsupported,  // EOPNOTSUPP / EINVAL: the driver has no statistics; do not ask again
    gone,         // ENODEV / ENXIO: the interface disappeared
    error,        // anything else (EPERM, EFAULT, ...): warn
};

class EthtoolSocket {
  public:
    EthtoolSocket();  // AF_INET dgram, else AF_UNIX dgram (a netns without IPv4)
    EthtoolSocket(const EthtoolSocket&) = delete;
    EthtoolSocket& operator=(const EthtoolSocket&) = delete;
    ~EthtoolSocket();

    bool ok() const { return fd_ >= 0; }
    const std::string& open_error() const { return open_error_; }

    // Number of ETH_SS_STATS strings the driver has now.
    EthtoolStatus stat_count(const std::string& ifname, std::uint32_t& count, std::string& error);
    // All ETH_SS_STATS names, `count` of them.
    EthtoolStatus stat_names(const std::string& ifname, std::uint32_t count, std::vector<std::string>& names,
                             std::string& error);
    // The values, `count` of them as stat_names() listed. `buffer` is the caller's, reused between samples
    // (sized with stats_buffer_slots). On return `values` points into `buffer` and `n_stats` is how many
    // the kernel wrote: anything but `count` means the driver's list changed, so the names are stale.
    // Kernels differ here: older ones ignore the n_stats we pass and write as many values as the driver
    // has *now* (hence the headroom in the buffer); newer ones (seen on 6.18) answer n_stats = 0 and no
    // values when ours does not match.
    EthtoolStatus stats(const std::string& ifname, std::uint32_t count, std::vector<std::uint64_t>& buffer,
                        const std::uint64_t*& values, std::uint32_t& n_stats, std::string& error);

    // u64 slots `buffer` needs for `count` statistics with room for a count that grew meanwhile.
    static std::size_t stats_buffer_slots(std::uint32_t count);

  private:
    EthtoolStatus call(const std::string& ifname, void* data, std::string& error);
    int fd_ = -1;
    std::string open_error_;
};

}  // namespace stallscope
