// Prometheus textfile sink: one `*.prom` file per process for node_exporter's textfile collector,
// rewritten atomically each sample (temp file + rename in the same directory).
//
// Every series carries the context labels (static labels, then host and scheduler when known;
// sink_labels.h) plus its entity labels: gpu + uuid, device + port (RDMA), interface (netdev). The job is
// not a label of every series (that multiplies the series by the jobs a node runs: sites drop
// dcgm-exporter's hpc_job for it): stallscope_job_info{job_id,step_id} is one series to join on host.
// Counters are exported raw (`_total`; Prometheus' rate() handles resets); a counter the snapshot has as
// missing/garbage is left out, never written as 0. Metrics (prefix stallscope_):
//   core     build_info{version}, sample_timestamp_seconds, sample_interval_seconds (periodic only),
//            profile_label{label} (state set FAST|SLOW|FAIL_RISK|UNKNOWN), profile_confidence_ratio,
//            profile_bottleneck{hint} (state set), profile_reasons, profile_reason_active{code,category,
//            severity,subject}, alerts_active{severity}, warnings, collector_failures,
//            textfile_entities_dropped{kind}
//   job      job_info{job_id,step_id,scope}, job_memory_{,peak_,limit_}bytes, job_oom_{events,kills}_total,
//            job_cpu_seconds_total, job_cpu_{,throttled_}periods_total, job_cpu_throttled_seconds_total,
//            job_pressure_ratio{resource,kind,window} (10), job_pressure_stalled_seconds_total{resource,kind}
//            (5)
//   gpu      gpu_info{pci_bus_id,name,vendor}, gpu_utilization_ratio, gpu_memory_{used,total}_bytes,
//            gpu_temperature_celsius, gpu_power_watts, gpu_power_limit_watts, gpu_sm_clock_hertz,
//            gpu_sm_clock_max_hertz, gpu_throttle_reason{reason} (0/1, 9 NVML reasons),
//            gpu_ecc_{uncorrected,corrected}_errors_total, gpu_remapped_rows_{pending,failure},
//            gpu_energy_joules_total, gpu_{power,thermal}_violation_seconds_total,
//            gpu_xid_errors_total (accumulated by this sink), gpu_xid_last_code
//   depth    gpu_{sm_active,sm_occupancy,tensor_active,dram_bandwidth}_ratio (GPM),
//            gpu_{pcie,nvlink}_{transmit,receive}_bytes_per_second (GPM), gpu_nvlink_links,
//            gpu_nvlink_{transmit,receive}_bytes_total, gpu_pcie_replays_total,
//            gpu_pcie_{transmit,receive}_bytes_total, gpu_nvlink_errors_total{kind} (crc|replay|recovery),
//            gpu_mig_info{parent_gpu,parent_uuid,gpu_instance,compute_instance} (MIG entries),
//            gpu_processes, gpu_foreign_processes, gpu_foreign_process_memory_bytes (per GPU, no pid)
//   network  network_{receive,transmit}_{bytes,packets,errors,drops}_total (/proc/net/dev, `lo` skipped),
//            network_pause_frames_total{direction,priority}, network_pause_duration_seconds_total
//            {direction,priority} (ethtool µs / 1e6), network_pause_storm_events_total{severity},
//            network_ethtool_events_total{counter} (fixed allow-list)
//   rdma     rdma_port_info{link_layer,netdev}, rdma_port_active, rdma_port_link_up,
//            rdma_port_rate_bytes_per_second, rdma_port_{receive,transmit}_bytes_total,
//            rdma_port_events_total{counter}, rdma_hw_events_total{counter} (fixed allow-lists)
//
// Series bound. Per entity, with every optional value present:
//   core 54 (1+1+1 + 4 label + 1 + 5 hint + 1 + 32 reasons max + 2 + 1 + 1 + 4)
//   job 25 (1 info + 3 memory + 2 oom + 4 cpu + 10 pressure ratios + 5 stall totals)
//   per GPU 48 (1 info + 8 gauges + 9 throttle reasons + 7 health/energy + 2 xid
//               + 8 GPM + 9 NVLink/PCIe + 1 MIG + 3 processes)
//   per RDMA port 41 (1 info + 3 state/rate + 2 bytes + 14 port counters + 21 hw_counters)
//   per interface 56 (8 net/dev + 18 pause frames + 18 pause durations + 2 storm + 10 ethtool)
// DGX-like node (8 GPUs, 8 single-port HCAs, 16 netdevs): 54 + 25 + 8*48 + 8*41 + 16*56 = 1687 series,
// whatever the number of jobs and processes it has run. Entities beyond 64 GPU entries (8 GPUs x 7 MIG
// slices + the 8 parents), 16 RDMA ports, 32 interfaces are dropped and counted in
// textfile_entities_dropped, so no node ever exceeds max_series(64, 16, 32) = 5599.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"
#include "libstallscope/sinks/exposition_writer.h"
#include "libstallscope/sinks/sink_labels.h"

namespace stallscope {

namespace textfile {
struct Entities;
}

namespace textfile_bound {
inline constexpr std::size_t kMaxGpus = 64, kMaxRdmaPorts = 16, kMaxInterfaces = 32, kMaxReasons = 32;
inline constexpr std::size_t kCore = 22 + kMaxReasons, kJob = 25, kPerGpu = 27 + 21, kPerRdmaPort = 41,
                             kPerInterface = 56;
constexpr std::size_t max_series(std::size_t gpus, std::size_t rdma_ports, std::size_t interfaces) {
    return kCore + kJob + gpus * kPerGpu + rdma_ports * kPerRdmaPort + interfaces * kPerInterface;
}
static_assert(max_series(8, 8, 16) == 1687);
static_assert(max_series(kMaxGpus, kMaxRdmaPorts, kMaxInterfaces) == 5599);
}  // namespace textfile_bound

// Xid events per GPU since the sink started (the snapshot only has this interval's codes).
struct GpuXidTotal {
    std::uint64_t count = 0;
    int last_code = 0;
};

struct PrometheusTextfileOptions {
    // fsync before rename. Off by default: the file is regenerated every interval and readers only need
    // rename atomicity; a 1 Hz fsync would add writeback stalls on the node disk we are measuring.
    bool fsync = false;
    // Skip writes closer than this to the previous one (Xid totals still accumulate). Rendering +
    // writing a DGX-sized file costs ~0.5-1 ms, most of the helper's 0.1 %-of-a-core budget at 1 s;
    // node_exporter is scraped every 15-60 s, so the per-step helper can use e.g. 10 s. 0 = every sample.
    double min_interval_seconds = 0;
};

class PrometheusTextfile {
  public:
    PrometheusTextfile(std::string path, Labels static_labels, PrometheusTextfileOptions options = {});
    ~PrometheusTextfile();
    PrometheusTextfile(const PrometheusTextfile&) = delete;
    PrometheusTextfile& operator=(const PrometheusTextfile&) = delete;

    // Render and replace the file. Returns false with `error` set (the old file is left intact).
    // Within options.min_interval_seconds of the last successful write it only accumulates Xids.
    bool write(const Snapshot& snapshot, const Profile& profile, const Rates* rates, std::string& error);
    // Delete the file (and a temp file of ours); for the per-step helper at step end. Idempotent.
    void remove();

    // The exposition text without writing it (tests, --dry-run). Updates Xid totals like write().
    const std::string& render(const Snapshot& snapshot, const Profile& profile, const Rates* rates);
    std::size_t series() const { return writer_.series(); }
    const std::string& path() const { return path_; }

  private:
    void accumulate_xids(const Snapshot& snapshot);

    std::string path_;
    Labels static_labels_;
    PrometheusTextfileOptions options_;
    ExpositionWriter writer_;
    std::unique_ptr<textfile::Entities> entities_;   // reused per sample
    std::map<std::string, GpuXidTotal> xid_totals_;  // gpu_key -> totals since this sink started
    double last_xid_time_ = -1;
    double last_write_time_ = -1;
};

}  // namespace stallscope
