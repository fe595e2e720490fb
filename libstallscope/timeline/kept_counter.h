// Where a v2 "a" pointer (or a "set" of a gauge) lands in the Snapshot the reader keeps: an integer counter
// of an interface, RDMA port or GPU (a member, or a name in one of its counter maps), a GPU gauge, or a
// number of host_stats (its psi included). The reader then writes the value there instead of re-reading
// the whole element from the tree (which costs a port's ~60 map entries, host_stats' 23 fields).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

struct KeptCounter {
    enum class Kind : unsigned char { none, interface, rdma, gpu, host };
    Kind kind = Kind::none;
    std::size_t element = 0;
    Counter NetInterface::*interface_counter = nullptr;
    CounterMap NetInterface::*interface_map = nullptr;
    Counter RdmaPort::*rdma_counter = nullptr;
    CounterMap RdmaPort::*rdma_map = nullptr;
    Counter Gpu::*gpu_counter = nullptr;
    Gauge Gpu::*gpu_gauge = nullptr;  // a GPU gauge: placed from a "set" of a number
    Counter HostStats::*host_counter = nullptr;
    Gauge HostStats::*host_gauge = nullptr;
    Counter Psi::*psi_counter = nullptr;
    Gauge Psi::*psi_gauge = nullptr;
    std::string name;  // the map entry's name (a map member only)
};

// Fills `out` for `pointer` ("/rdma/3/counters/port_xmit_data", "/host_stats/psi/io_full_avg10"); Kind::none
// when it is not one the reader can place (then the element is re-read). `out.name` is assigned over: no
// allocation once grown.
void parse_kept_counter(std::string_view pointer, KeptCounter& out);

// The counter (gauge) `c` names in `s`, or null when `s` has no such element or map entry or `c` names
// the other kind.
Counter* kept_counter(Snapshot& s, const KeptCounter& c);
// kept_counter of each of `list` that names one, into `out` (assigned over).
void kept_counters(Snapshot& s, std::span<const KeptCounter> list, std::vector<const Counter*>& out);
Gauge* kept_gauge(Snapshot& s, const KeptCounter& c);

}  // namespace stallscope
