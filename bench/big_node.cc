// The big-node tree for sample_cost (see big_node.h).
#include "bench/big_node.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace stallscope::bench {

namespace fs = std::filesystem;

std::size_t count_regular_files(const std::string& root) {
    std::size_t n = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
        if (it->symlink_status().type() == fs::file_type::regular) ++n;
    return n;
}

std::string build_big_node(const std::string& from, const std::string& root, int ports_per_hca, int netdevs) {
    std::error_code ec;
    fs::create_directory(root, ec);
    fs::copy(from, root, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) return "copy " + from + ": " + ec.message();
    const std::string ib = root + "/sys/class/infiniband";
    for (const auto& dev : list_dir(ib)) {
        const fs::path device = fs::canonical(ib + "/" + dev, ec);
        if (ec) return ib + "/" + dev + ": " + ec.message();
        for (int port = 2; port <= ports_per_hca; ++port) {
            const fs::path dst = device / "ports" / std::to_string(port);
            fs::copy(device / "ports" / "1", dst, fs::copy_options::recursive, ec);
            if (ec) return "copy port 1 of " + dev + ": " + ec.message();
            // Distinct traffic on the copy, so the two ports do not read as one.
            for (const char* c : {"port_rcv_data", "port_xmit_data"}) {
                const auto path = dst / "counters" / c;
                const auto value = std::strtoull(read_file(path.string()).c_str(), nullptr, 10);
                std::ofstream(path) << value / 2 + static_cast<unsigned long long>(port) << "\n";
            }
        }
    }
    const std::string net_dev = root + "/proc/net/dev";
    std::string text = read_file(net_dev);
    auto present = net_dev_names(text);
    // What a DGX H100 has besides lo, the management port and the compute IPoIB netdevs: storage ports
    // of the dual-port ConnectX-7s in Ethernet mode, a second management port, docker0; then veths.
    const std::vector<std::string> extra = {"eno2",          "enp41s0f0np0",  "enp41s0f1np1",
                                            "enp170s0f0np0", "enp170s0f1np1", "docker0"};
    std::ofstream out(net_dev, std::ios::app);
    for (std::size_t i = 0; static_cast<int>(present.size()) < netdevs; ++i) {
        const std::string name = i < extra.size() ? extra[i] : "veth" + std::to_string(i - extra.size());
        if (std::find(present.begin(), present.end(), name) != present.end()) continue;
        const unsigned long long k = i + 1;
        char row[256];
        std::snprintf(row, sizeof row, "%6s:%llu %llu 0 %llu 0 0 0 %llu %llu %llu 0 0 0 0 0 0\n",
                      name.c_str(), k * 7919000123ULL, k * 6151231ULL, k, k * 11, k * 5113000457ULL,
                      k * 4007001ULL);
        out << row;
        present.push_back(name);
    }
    return out ? "" : net_dev + ": write failed";
}

}  // namespace stallscope::bench
