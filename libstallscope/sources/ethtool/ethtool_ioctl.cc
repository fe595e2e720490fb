#include "libstallscope/sources/ethtool/ethtool_ioctl.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace stallscope {

EthtoolSocket::EthtoolSocket() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) open_error_ = std::strerror(errno);
}

EthtoolSocket::~EthtoolSocket() {
    if (fd_ >= 0) ::close(fd_);
}

EthtoolStatus EthtoolSocket::call(const std::string& ifname, void* data, std::string& error) {
    if (fd_ < 0) {
        error = "no socket: " + open_error_;
        return EthtoolStatus::error;
    }
    if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
        error = "bad interface name";
        return EthtoolStatus::gone;
    }
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
    ifr.ifr_data = static_cast<char*>(data);
    int rc;
    do {
        rc = ::ioctl(fd_, SIOCETHTOOL, &ifr);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return EthtoolStatus::ok;
    const int err = errno;
    error = std::strerror(err);
    if (err == EOPNOTSUPP || err == EINVAL) return EthtoolStatus::unsupported;
    if (err == ENODEV || err == ENXIO) return EthtoolStatus::gone;
    return EthtoolStatus::error;
}

EthtoolStatus EthtoolSocket::stat_count(const std::string& ifname, std::uint32_t& count, std::string& error) {
    // struct ethtool_sset_info ends in a flexible array: one u32 per bit set in sset_mask.
    alignas(ethtool_sset_info) unsigned char raw[sizeof(ethtool_sset_info) + sizeof(std::uint32_t)] = {};
    auto* info = reinterpret_cast<ethtool_sset_info*>(raw);
    info->cmd = ETHTOOL_GSSET_INFO;
    info->sset_mask = 1ULL << ETH_SS_STATS;
    const auto status = call(ifname, info, error);
    if (status != EthtoolStatus::ok) return status;
    count = 0;
    if (info->sset_mask & (1ULL << ETH_SS_STATS))
        std::memcpy(&count, raw + offsetof(ethtool_sset_info, data), sizeof count);
    return EthtoolStatus::ok;
}

EthtoolStatus EthtoolSocket::stat_names(const std::string& ifname, std::uint32_t count,
                                        std::vector<std::string>& names, std::string& error) {
    // Like GSTATS, GSTRINGS ignores the caller's len and copies as many strings as the driver has now:
    // size for a grown list (stats_buffer_slots' headroom), never read past what was sized.
    const std::size_t capacity = stats_buffer_slots(count);
    std::vector<std::uint64_t> buffer((sizeof(ethtool_gstrings) + capacity * ETH_GSTRING_LEN + 7) / 8);
    auto* strings = reinterpret_cast<ethtool_gstrings*>(buffer.data());
    strings->cmd = ETHTOOL_GSTRINGS;
    strings->string_set = ETH_SS_STATS;
    strings->len = count;
    const auto status = call(ifname, strings, error);
    if (status != EthtoolStatus::ok) return status;
    if (strings->len > capacity) {
        error = "driver string count grew past the buffer";
        return EthtoolStatus::error;
    }
    const auto* base = reinterpret_cast<const char*>(buffer.data()) + offsetof(ethtool_gstrings, data);
    names.clear();
    names.reserve(strings->len);
    for (std::uint32_t i = 0; i < strings->len; ++i) {
        const char* s = base + std::size_t{i} * ETH_GSTRING_LEN;
        names.emplace_back(s, strnlen(s, ETH_GSTRING_LEN));
    }
    return EthtoolStatus::ok;
}

std::size_t EthtoolSocket::stats_buffer_slots(std::uint32_t count) {
    const std::size_t header = offsetof(ethtool_stats, data) / 8;
    // Headroom: twice the count plus 256, so a driver that grew its list (more channels) between our
    // GSSET_INFO and GSTATS cannot make the kernel write past the buffer.
    return header + 2 * std::size_t{count} + 256;
}

EthtoolStatus EthtoolSocket::stats(const std::string& ifname, std::uint32_t count,
                                   std::vector<std::uint64_t>& buffer, const std::uint64_t*& values,
                                   std::uint32_t& n_stats, std::string& error) {
    const std::size_t header = offsetof(ethtool_stats, data) / 8;
    if (buffer.size() < stats_buffer_slots(count)) buffer.assign(stats_buffer_slots(count), 0);
    auto* stats = reinterpret_cast<ethtool_stats*>(buffer.data());
    stats->cmd = ETHTOOL_GSTATS;
    stats->n_stats = count;
    const auto status = call(ifname, stats, error);
    if (status != EthtoolStatus::ok) return status;
    n_stats = stats->n_stats;
    if (n_stats > buffer.size() - header) {
        error = "driver statistics count grew past the buffer";
        return EthtoolStatus::error;
    }
    values = buffer.data() + header;
    return EthtoolStatus::ok;
}

}  // namespace stallscope
