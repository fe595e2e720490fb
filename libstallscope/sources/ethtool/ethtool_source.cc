// The ethtool source: PFC pause, pause-storm and buffer-drop statistics per interface, attached to the
// NetInterface rows the procfs source made (so it runs after it).
//
// Real mode (roots.ethtool empty, real /proc): SIOCETHTOOL on one kept-open socket. Names are fetched
// once per interface (GSSET_INFO + GSTRINGS) and the indices of the kept statistics remembered; each
// sample is GSSET_INFO (a cheap count check) + GSTATS. The count check matters: older kernels ignore the
// n_stats we pass to GSTATS and write as many values as the driver has *now* (mlx5 adds ~60 per channel
// when channels are added), so a stale count would let them write past our buffer; the buffer also has
// headroom (EthtoolSocket::stats_buffer_slots). Newer kernels answer a mismatch with n_stats = 0. Drivers
// that answer EOPNOTSUPP are remembered and never asked again; `lo` is never asked.
//
// Fixture mode (roots.ethtool set): `<roots.ethtool>/<iface>` holds `ethtool -S <iface>` text; a missing
// file means "no statistics" (like EOPNOTSUPP). With a fixture procfs but no ethtool root, nothing is
// read: the interface names are the fixture's, and real NICs must not leak into a fixture snapshot.
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libstallscope/sources/ethtool/ethtool_ioctl.h"
#include "libstallscope/sources/ethtool/ethtool_parsers.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/util/counter_file.h"

namespace stallscope {
namespace {

constexpr int kReprobeEvery = 60;  // samples between re-asking an interface that had nothing to keep

struct InterfaceStats {
    enum class Mode { unprobed, active, unsupported, nothing_kept };
    Mode mode = Mode::unprobed;
    std::uint32_t count = 0;  // ETH_SS_STATS count when the names were fetched
    // Kept statistics in name order (so CounterMap inserts with a hint): index into GSTATS, name.
    std::vector<std::pair<std::uint32_t, std::string>> kept;
    std::vector<std::uint64_t> buffer;
    int samples_since_probe = 0;
};

class EthtoolSource final : public Source {
  public:
    explicit EthtoolSource(const Roots& roots) : ethtool_root_(roots.ethtool) {
        if (ethtool_root_.empty() && !roots.fixture_mode()) socket_ = std::make_unique<EthtoolSocket>();
    }

    std::string_view name() const override { return "ethtool"; }

    void sample(Snapshot& snapshot) override {
        for (auto& iface : snapshot.interfaces) {
            if (iface.name == "lo") continue;
            if (!ethtool_root_.empty())
                read_fixture(iface, snapshot.warnings);
            else if (socket_)
                read_ioctl(iface, snapshot.warnings);
        }
        // Forget interfaces that left /proc/net/dev (container veths come and go by the thousand).
        if (interfaces_.size() > snapshot.interfaces.size()) {
            std::set<std::string_view> present;
            for (const auto& iface : snapshot.interfaces) present.insert(iface.name);
            std::erase_if(interfaces_, [&](const auto& entry) { return !present.count(entry.first); });
        }
    }

  private:
    void read_fixture(NetInterface& iface, std::vector<std::string>& warnings) {
        const std::string path = ethtool_root_ + "/" + iface.name;
        struct stat st;
        if (::stat(path.c_str(), &st) != 0) return;  // no file: this NIC has no statistics
        std::string error;
        auto text = read_text_file(path, error);
        if (!text) {
            warnings.push_back(path + ": unreadable: " + error);
            return;
        }
        for (auto& [name, value] : parse_ethtool_stats_text(*text, path, warnings))
            iface.pause.insert_or_assign(name, value);
    }

    void warn_once(const std::string& ifname, std::string message, std::vector<std::string>& warnings) {
        if (warned_.insert(ifname).second)
            warnings.push_back("ethtool " + ifname + ": " + std::move(message));
    }

    // Fetches names and picks the kept ones. Returns false when there is nothing to read this sample.
    bool probe(const std::string& ifname, InterfaceStats& state, std::vector<std::string>& warnings) {
        state.samples_since_probe = 0;
        std::uint32_t count = 0;
        auto status = socket_->stat_count(ifname, count, error_);
        std::vector<std::string> names;
        if (status == EthtoolStatus::ok && count > 0)
            status = socket_->stat_names(ifname, count, names, error_);
        if (status == EthtoolStatus::unsupported) {
            state.mode = InterfaceStats::Mode::unsupported;
            return false;
        }
        if (status == EthtoolStatus::gone) {
            state.mode = InterfaceStats::Mode::unprobed;
            return false;
        }
        if (status == EthtoolStatus::error) {
            state.mode = InterfaceStats::Mode::nothing_kept;  // retried every kReprobeEvery samples
            warn_once(ifname, "statistics unreadable: " + error_, warnings);
            return false;
        }
        state.count = static_cast<std::uint32_t>(names.size());
        state.kept.clear();
        for (std::uint32_t i = 0; i < names.size(); ++i)
            if (is_backpressure_stat(names[i])) state.kept.emplace_back(i, std::move(names[i]));
        std::sort(state.kept.begin(), state.kept.end(),
                  [](const auto& a, const auto& b) { return a.second < b.second; });
        if (state.kept.empty()) {
            state.mode = InterfaceStats::Mode::nothing_kept;
            state.buffer = {};
            return false;
        }
        state.mode = InterfaceStats::Mode::active;
        state.buffer.assign(EthtoolSocket::stats_buffer_slots(state.count), 0);
        return true;
    }

    void read_ioctl(NetInterface& iface, std::vector<std::string>& warnings) {
        InterfaceStats& state = interfaces_[iface.name];
        using Mode = InterfaceStats::Mode;
        if (state.mode == Mode::unsupported) return;
        if (state.mode == Mode::nothing_kept && ++state.samples_since_probe < kReprobeEvery) return;
        if (state.mode != Mode::active && !probe(iface.name, state, warnings)) return;

        // The count guard (see the file comment), then the values; a changed count means new names.
        std::uint32_t count = 0;
        auto status = socket_->stat_count(iface.name, count, error_);
        if (status == EthtoolStatus::ok && count != state.count && !probe(iface.name, state, warnings))
            return;
        const std::uint64_t* values = nullptr;
        std::uint32_t n_stats = 0;
        if (status == EthtoolStatus::ok)
            status = socket_->stats(iface.name, state.count, state.buffer, values, n_stats, error_);
        if (status == EthtoolStatus::ok && n_stats != state.count) {
            state.mode = Mode::unprobed;  // the list changed under us: names next sample, no values now
            return;
        }
        switch (status) {
            case EthtoolStatus::ok:
                break;
            case EthtoolStatus::unsupported:
                state.mode = Mode::unsupported;
                return;
            case EthtoolStatus::gone:
                interfaces_.erase(iface.name);
                return;
            case EthtoolStatus::error:
                warn_once(iface.name, "statistics unreadable: " + error_, warnings);
                return;
        }
        for (const auto& [index, name] : state.kept)
            iface.pause.emplace_hint(iface.pause.end(), name, values[index]);
    }

    std::string ethtool_root_;
    std::unique_ptr<EthtoolSocket> socket_;
    std::map<std::string, InterfaceStats> interfaces_;
    std::set<std::string> warned_;
    std::string error_;
};

}  // namespace

std::unique_ptr<Source> make_ethtool_source(const Roots& roots) {
    return std::make_unique<EthtoolSource>(roots);
}

}  // namespace stallscope
