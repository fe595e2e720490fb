// Per-GPU and per-port statistics of one recording (one step on one node), accumulated one sample at a
// time. The helper feeds it live and writes its JSON into the verdict file (`node_stats`), so the job
// merge reads N small verdict files instead of replaying N timelines; replay feeds it for a node whose
// verdict is missing. A value that was never measured stays empty (JSON null), never 0.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

// Version of the `node_stats` object inside verdict.<step>.<host>.json (stallscope.verdict/1 plus it).
inline constexpr int kNodeStatsVersion = 1;

struct GpuStats {
    std::string host, step_id, uuid, name;  // host and step_id: set by the job merge
    int index = -1;
    int samples = 0;
    std::optional<double> mean_util_pct, mean_memory_pct, mean_power_w, max_temperature_c;
    // NVML GPM (Hopper+): what "utilization" hides (busy-wait reads 100 %); absent where not measured.
    std::optional<double> mean_sm_active_pct, mean_tensor_active_pct, mean_dram_bandwidth_pct;
    std::optional<double> throttle_share;  // samples with a slowdown reason (power/thermal/HW), 0..1
    std::optional<double> idle_share;      // samples at < 5 % utilization, 0..1
};

struct PortStats {
    std::string host, step_id, port, netdev;                      // host and step_id: set by the job merge
    std::optional<double> rx_bytes, tx_bytes;                     // over the recording
    std::optional<double> cnp_per_second, ecn_marked_per_second;  // averages
    std::optional<double> pause_occupancy;  // share of time paused (pause_duration), 0..1
    std::optional<double>
        loss_per_million_packets;  // out_of_sequence + packet_seq_err + ... per 1e6 received
};

struct NodeStats {
    int samples = 0;
    double start_time = 0, end_time = 0;              // first and last sample
    int gpus_allocated = 0;                           // the scheduler's view (context.gpus)
    std::vector<GpuStats> gpus;                       // index order
    std::vector<PortStats> ports;                     // port name order
    std::optional<double> mean_gpu_util_pct() const;  // over the measured GPUs
    int gpus_measured() const;                        // GPUs with a utilization figure
};

class NodeStatsAccumulator {
  public:
    // Computes the rates against the previous sample itself (keeps a copy of it): for replay.
    void add(const Snapshot& s);
    // With the rates the caller already has (the profiler's last_rates(), nullptr for the first sample):
    // for the live helper, no second copy of each snapshot.
    void add(const Snapshot& s, const Rates* rates_since_previous);
    NodeStats finish(const std::string& host) const;
    Json to_json() const;  // the verdict file's `node_stats` object

  private:
    struct GpuSums {
        GpuStats identity;
        int samples = 0, util_n = 0, memory_n = 0, power_n = 0, temperature_n = 0, sm_n = 0, tensor_n = 0,
            dram_n = 0;
        double sm = 0, tensor = 0, dram = 0;
        double util = 0, memory = 0, power = 0, max_temperature = 0, throttled = 0, idle = 0;
    };
    struct PortSums {
        std::string port, netdev;
        double seconds = 0, rx_bytes = 0, tx_bytes = 0, cnp = 0, ecn = 0, paused_us = 0, rcv_packets = 0,
               lost = 0;
        bool data_seen = false, cnp_seen = false, ecn_seen = false, pause_seen = false, loss_seen = false;
    };
    void add_gpu(const Gpu& g);
    void add_ports(const Rates& r, const Snapshot& s);

    std::map<std::string, GpuSums> gpus_;  // key: gpu_key()
    std::map<std::string, PortSums> ports_;
    std::optional<Snapshot> previous_;
    Rates rates_;      // add(s) only: against previous_, reused between samples
    std::string key_;  // the entity key being looked up, reused between samples
    int samples_ = 0, gpus_allocated_ = 0;
    double start_ = 0, end_ = 0;
};

Json to_json(const NodeStats& stats);
// Typed, non-throwing: a missing or wrong-typed field becomes a problem and stays empty.
NodeStats node_stats_from_json(const Json& object, std::vector<std::string>& problems);

}  // namespace stallscope
