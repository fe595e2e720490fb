// The big-node tree sample_cost measures: a fixture node copied and grown to more IB ports and netdevs.
#pragma once

#include <cstddef>
#include <string>

namespace stallscope::bench {

std::size_t count_regular_files(const std::string& root);

// Copies `from` into `root` (created) and grows it: ports 2..ports_per_hca on every HCA (copies of
// port 1) and /proc/net/dev rows up to `netdevs`. Returns an error text, empty on success.
std::string build_big_node(const std::string& from, const std::string& root, int ports_per_hca, int netdevs);

}  // namespace stallscope::bench
