// The infiniband source: every port of every RDMA device under <sysfs>/class/infiniband, its state, rate,
// link layer, netdev and every counters/ and hw_counters/ file, read with pread on kept-open fds.
//
// Devices, ports and counter files are listed once (then every InfinibandOptions::rediscover_every
// samples but at most every rediscover_min_seconds, or soon after a read failure); each sample is one
// pread per file, written over the previous sample's maps when the caller recycles it. Files whose read fails
// with EINVAL/EOPNOTSUPP/EACCES (the mlx5 ACCESS_REG case on restricted PFs: every read logs to dmesg,
// node_exporter #3434, gpud #1164) and "N/A (no PMA)" files are never re-read and warned about once;
// their value stays null in every snapshot.
#include "libstallscope/sources/infiniband/infiniband_source.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/infiniband/infiniband_parsers.h"
#include "libstallscope/util/counter_file.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope {
namespace {

// "mlx5_2" < "mlx5_10": digit runs compare as numbers, so reports list devices as admins count them.
bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) &&
            std::isdigit(static_cast<unsigned char>(b[j]))) {
            std::size_t ei = i, ej = j;
            while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
            while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
            const auto da = a.substr(i, ei - i), db = b.substr(j, ej - j);
            if (da.size() != db.size()) return da.size() < db.size();
            if (da != db) return da < db;
            i = ei;
            j = ej;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

// Entry names of a directory (symlinks included: class/infiniband/* are links), naturally sorted
// (mlx5_2 before mlx5_10). nullopt when the directory cannot be opened.
std::optional<std::vector<std::string>> naturally_sorted_entries(const std::string& path) {
    auto names = directory_entries(path);
    if (names) std::sort(names->begin(), names->end(), natural_less);
    return names;
}

struct CounterReader {
    std::string name;
    CounterFile file;
    bool no_pma = false;  // "N/A (no PMA)" seen: never re-read
};

struct PortReader {
    std::string device;
    int port = 0;
    CounterFile state, phys_state, rate;
    std::string link_layer, netdev;
    std::vector<CounterReader> counters, hw_counters;
    CounterMap spare_counters, spare_hw_counters;  // the maps of a recycled sample's port, refilled

    std::string key() const { return device + "/" + std::to_string(port); }
    bool same_files_as(const PortReader& other) const {
        auto names = [](const std::vector<CounterReader>& v) {
            std::vector<std::string_view> out;
            for (const auto& c : v) out.push_back(c.name);
            return out;
        };
        return names(counters) == names(other.counters) && names(hw_counters) == names(other.hw_counters);
    }
};

// The netdev behind a port: gid_attrs/ndevs/0 (RoCE, kernel >= 5.x), else the one <dev>/device/net/*
// entry, else the entry whose dev_port is port-1 (dual-port cards), else the first one.
std::string find_netdev(const std::string& device_dir, const std::string& port_dir, int port) {
    if (auto name = read_attribute_text(port_dir + "/gid_attrs/ndevs/0"); !name.empty()) return name;
    const std::string net_dir = device_dir + "/device/net";
    auto netdevs = naturally_sorted_entries(net_dir);
    if (!netdevs || netdevs->empty()) return {};
    if (netdevs->size() == 1) return netdevs->front();
    for (const auto& name : *netdevs) {
        auto dev_port = parse_u64(read_attribute_text(net_dir + "/" + name + "/dev_port"));
        if (dev_port && *dev_port + 1 == static_cast<std::uint64_t>(port)) return name;
    }
    return netdevs->front();
}

std::vector<CounterReader> counter_readers(const std::string& dir) {
    std::vector<CounterReader> readers;
    if (auto names = naturally_sorted_entries(dir)) {
        // Byte order, not natural order: CounterMap is a std::map, so the snapshot fills it with hints.
        std::sort(names->begin(), names->end());
        readers.reserve(names->size());
        for (auto& name : *names) {
            std::string path = dir + "/" + name;
            readers.push_back(CounterReader{std::move(name), CounterFile(std::move(path))});
        }
    }
    return readers;
}

class InfinibandSource final : public Source {
  public:
    InfinibandSource(const Roots& roots, const InfinibandOptions& options)
        : class_dir_(roots.sysfs + "/class/infiniband"), options_(options) {}

    std::string_view name() const override { return "infiniband"; }

    void sample(Snapshot& snapshot) override {
        ++samples_since_discovery_;
        if (!discovered_ || listing_due() ||
            (read_failed_ && samples_since_discovery_ >= options_.rediscover_after_failure_gap)) {
            discover(snapshot.warnings);
            discovered_at_ = std::chrono::steady_clock::now();
        }
        read_failed_ = false;
        snapshot.rdma.reserve(snapshot.rdma.size() + ports_.size());
        for (auto& reader : ports_) sample_port(reader, snapshot.rdma.emplace_back(), snapshot.warnings);
    }

    // A port's maps come back to its reader; read_counters writes the next values over them.
    void recycle(Snapshot& old) override {
        std::size_t at = 0;  // the same order as ports_, unless discovery changed it
        for (auto& port : old.rdma) {
            if (at >= ports_.size() || ports_[at].device != port.device || ports_[at].port != port.port) {
                at = 0;
                while (at < ports_.size() &&
                       (ports_[at].device != port.device || ports_[at].port != port.port))
                    ++at;
                if (at == ports_.size()) continue;
            }
            ports_[at].spare_counters.swap(port.counters);
            ports_[at].spare_hw_counters.swap(port.hw_counters);
            ++at;
        }
    }

  private:
    bool listing_due() const {
        return samples_since_discovery_ >= options_.rediscover_every &&
               std::chrono::steady_clock::now() - discovered_at_ >=
                   std::chrono::duration<double>(options_.rediscover_min_seconds);
    }

    // Keyed by path: the reason may read differently on later attempts ("not re-read"), the file not.
    void warn_once(const std::string& path, std::string message, std::vector<std::string>& warnings) {
        if (warned_once_.insert(path).second) warnings.push_back(std::move(message));
    }

    void discover(std::vector<std::string>& warnings) {
        discovered_ = true;
        samples_since_discovery_ = 0;
        std::map<std::string, PortReader> previous;
        for (auto& p : ports_) previous.emplace(p.key(), std::move(p));
        ports_.clear();
        // No class/infiniband is the normal case on a node without RDMA: no warning.
        auto devices = naturally_sorted_entries(class_dir_);
        if (!devices) return;
        for (const auto& device : *devices) {
            const std::string device_dir = class_dir_ + "/" + device;
            auto ports = naturally_sorted_entries(device_dir + "/ports");
            if (!ports) {
                warn_once(device_dir, device_dir + "/ports: unreadable; device skipped", warnings);
                continue;
            }
            for (const auto& port_name : *ports) {
                auto number = parse_u64(port_name);
                if (!number || *number > 255) continue;
                const std::string dir = device_dir + "/ports/" + port_name;
                PortReader reader;
                reader.device = device;
                reader.port = static_cast<int>(*number);
                reader.state = CounterFile(dir + "/state");
                reader.phys_state = CounterFile(dir + "/phys_state");
                reader.rate = CounterFile(dir + "/rate");
                reader.link_layer = read_attribute_text(dir + "/link_layer");
                if (reader.link_layer.empty())
                    warn_once(dir + "/link_layer", dir + "/link_layer: missing or empty", warnings);
                reader.netdev = find_netdev(device_dir, dir, reader.port);
                reader.counters = counter_readers(dir + "/counters");
                reader.hw_counters = counter_readers(dir + "/hw_counters");
                // Keep the old reader (its fds and what it learned about unsupported files) when the
                // port still has the same files.
                if (auto old = previous.find(reader.key());
                    old != previous.end() && old->second.same_files_as(reader)) {
                    old->second.link_layer = std::move(reader.link_layer);
                    old->second.netdev = std::move(reader.netdev);
                    ports_.push_back(std::move(old->second));
                } else {
                    ports_.push_back(std::move(reader));
                }
            }
        }
    }

    // A port attribute (state, phys_state, rate): re-read each sample, a warning when unreadable.
    std::optional<std::string_view> read_attribute(CounterFile& file, std::vector<std::string>& warnings) {
        auto text = file.read(error_);
        if (!text) {
            if (file.unsupported()) {
                warn_once(file.path(), file.path() + ": unreadable (" + error_ + "); not re-read", warnings);
            } else {
                warnings.push_back(file.path() + ": unreadable: " + error_);
                read_failed_ = true;
            }
        }
        return text;
    }

    void sample_port(PortReader& reader, RdmaPort& port, std::vector<std::string>& warnings) {
        port.device = reader.device;
        port.port = reader.port;
        port.link_layer = reader.link_layer;
        port.netdev = reader.netdev;
        if (auto text = read_attribute(reader.state, warnings)) {
            if (auto state = parse_port_state(*text))
                port.state = std::move(*state);
            else
                warnings.push_back(reader.state.path() + ": " + describe_bad_counter(*text));
        }
        if (auto text = read_attribute(reader.phys_state, warnings)) {
            if (auto state = parse_port_state(*text))
                port.phys_state = std::move(*state);
            else
                warnings.push_back(reader.phys_state.path() + ": " + describe_bad_counter(*text));
        }
        if (auto text = read_attribute(reader.rate, warnings)) {
            port.rate_gbps = parse_rate_gbps(*text);
            if (!port.rate_gbps)
                warnings.push_back(reader.rate.path() + ": not a rate '" +
                                   std::string(trim(*text).substr(0, 32)) + "'");
        }
        port.counters.swap(reader.spare_counters);  // a fresh port's maps are empty: the spares are now
        port.hw_counters.swap(reader.spare_hw_counters);
        read_counters(reader.counters, port.counters, warnings);
        read_counters(reader.hw_counters, port.hw_counters, warnings);
        port.rx_bytes = data_words_to_bytes(lookup(port.counters, "port_rcv_data"));
        port.tx_bytes = data_words_to_bytes(lookup(port.counters, "port_xmit_data"));
    }

    static Counter lookup(const CounterMap& map, const std::string& name) {
        auto it = map.find(name);
        return it == map.end() ? std::nullopt : it->second;
    }

    // Every reader's value into `out`: written over a recycled map that holds exactly the readers' names
    // (both in byte order), else into a rebuilt one.
    void read_counters(std::vector<CounterReader>& readers, CounterMap& out,
                       std::vector<std::string>& warnings) {
        bool reuse = out.size() == readers.size();
        auto slot = out.begin();
        for (std::size_t i = 0; reuse && i < readers.size(); ++i, ++slot)
            reuse = slot->first == readers[i].name;
        if (!reuse) out.clear();
        slot = out.begin();
        for (auto& c : readers) {
            Counter value;
            if (!c.no_pma) {
                if (auto text = c.file.read(error_)) {
                    value = parse_u64(*text);
                    if (!value && is_no_pma(*text)) {
                        c.no_pma = true;
                        warn_once(c.file.path(),
                                  c.file.path() +
                                      ": N/A (no PMA): the port has no performance management "
                                      "agent; not re-read",
                                  warnings);
                    } else if (!value) {
                        warnings.push_back(c.file.path() + ": " + describe_bad_counter(*text));
                    }
                } else if (c.file.unsupported()) {
                    warn_once(c.file.path(),
                              c.file.path() + ": unreadable (" + error_ +
                                  "); not re-read (restricted function or ACCESS_REG?)",
                              warnings);
                } else {
                    warnings.push_back(c.file.path() + ": unreadable: " + error_);
                    read_failed_ = true;
                }
            }
            if (reuse)
                (slot++)->second = value;
            else
                out.emplace_hint(out.end(), c.name, value);
        }
    }

    std::string class_dir_;
    InfinibandOptions options_;
    std::vector<PortReader> ports_;
    bool discovered_ = false;
    bool read_failed_ = false;
    int samples_since_discovery_ = 0;
    std::chrono::steady_clock::time_point discovered_at_;
    std::set<std::string> warned_once_;
    std::string error_;
};

}  // namespace

std::unique_ptr<Source> make_infiniband_source(const Roots& roots, const InfinibandOptions& options) {
    return std::make_unique<InfinibandSource>(roots, options);
}

std::unique_ptr<Source> make_infiniband_source(const Roots& roots) {
    return make_infiniband_source(roots, InfinibandOptions{});
}

}  // namespace stallscope
