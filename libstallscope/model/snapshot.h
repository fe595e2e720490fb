// One sample of a node: plain data, filled by sources, read by deltas, rules and sinks.
//
// Value rule (ARCHITECTURE.md): a counter that is missing, unreadable or not a valid unsigned 64-bit
// integer is std::nullopt (serialised as null or left out) and named in `warnings` -- never 0.
// Each struct with a fixed set of members is described once, at the end of this file (fields.h): JSON,
// text, rates and the timeline's moving fields are derived from that description.
// Every struct compares with a defaulted operator==: the v2 timeline writer serialises only the parts of a
// sample that differ from the previous one (a gauge going from 0.0 to -0.0 compares equal and is not
// rewritten; nothing reads the sign of a zero).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "libstallscope/model/fields.h"
#include "libstallscope/model/flat_map.h"
#include "libstallscope/model/nccl.h"

namespace stallscope {

inline constexpr const char* kSnapshotSchema = "stallscope.snapshot/1";

using Counter = std::optional<std::uint64_t>;
using Gauge = std::optional<double>;
// Raw counter name (as the kernel/NIC names it) -> value; null when the file held garbage. Flat
// (flat_map.h): rebuilt or rewritten every sample and walked in name order by the writer, rates and rules.
using CounterMap = FlatMap<Counter>;

struct JobContext {
    std::string scheduler = "none";  // slurm | kubernetes | none
    std::string job_id, step_id, job_name, user, nodelist, node_id;
    std::vector<std::string> gpus;  // the step's GPUs as the scheduler names them (global gres indices)
    std::vector<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES entries
    std::string pod, namespace_name;
    bool operator==(const JobContext&) const = default;
};

struct Psi {
    Gauge cpu_some_avg10, cpu_some_avg60;
    Gauge io_some_avg10, io_some_avg60, io_full_avg10, io_full_avg60;
    Gauge memory_some_avg10, memory_some_avg60, memory_full_avg10, memory_full_avg60;
    // Lifetime stall time in microseconds ("total=" field); deltas of these are exact, avg10 is smoothed.
    Counter cpu_some_total_us, io_some_total_us, io_full_total_us, memory_some_total_us, memory_full_total_us;
    bool operator==(const Psi&) const = default;
};

struct HostStats {
    Gauge load1, load5, load15;
    Counter mem_total_bytes, mem_available_bytes;
    Counter procs_running, procs_blocked;
    Counter oom_kills;  // /proc/vmstat oom_kill, lifetime
    Psi psi;
    bool operator==(const HostStats&) const = default;
};

// One row of /proc/net/dev plus what ethtool adds for the same interface.
struct NetInterface {
    std::string name;
    Counter rx_bytes, rx_packets, rx_errors, rx_dropped, rx_fifo, rx_frame, rx_compressed, rx_multicast;
    Counter tx_bytes, tx_packets, tx_errors, tx_dropped, tx_fifo, tx_colls, tx_carrier, tx_compressed;
    // ethtool -S fields that matter for PFC/backpressure (rx_pause, tx_prio3_pause, *_pause_duration,
    // tx_pause_storm_warning_events, rx_discards_phy, ...), raw names. Empty when ethtool gave nothing.
    CounterMap pause;
    bool operator==(const NetInterface&) const = default;
};

struct RdmaPort {
    std::string device;  // mlx5_0
    int port = 0;
    std::string state, phys_state;  // "ACTIVE", "LinkUp" (numeric prefix stripped)
    Gauge rate_gbps;
    std::string link_layer;      // InfiniBand | Ethernet
    std::string netdev;          // the netdev behind a RoCE port, "" when none
    CounterMap counters;         // ports/N/counters/*
    CounterMap hw_counters;      // ports/N/hw_counters/*
    Counter rx_bytes, tx_bytes;  // port_rcv_data * 4, port_xmit_data * 4
    std::string key() const { return device + "/" + std::to_string(port); }
    bool operator==(const RdmaPort&) const = default;
};

// NVML GPM (Hopper and newer) over the last >= 100 ms between two GPM samples: what the SMs, tensor cores
// and memory really did, where utilization_pct only says "some kernel ran". A metric NVML declined is null.
struct GpmMetrics {
    Gauge sm_active_pct;       // NVML_GPM_METRIC_SM_UTIL (~ DCGM PROF_SM_ACTIVE)
    Gauge sm_occupancy_pct;    // NVML_GPM_METRIC_SM_OCCUPANCY
    Gauge tensor_active_pct;   // NVML_GPM_METRIC_ANY_TENSOR_UTIL (~ PROF_PIPE_TENSOR_ACTIVE)
    Gauge dram_bandwidth_pct;  // NVML_GPM_METRIC_DRAM_BW_UTIL
    Gauge pcie_tx_mib_per_s, pcie_rx_mib_per_s;
    Gauge nvlink_tx_mib_per_s, nvlink_rx_mib_per_s;  // all links
    bool operator==(const GpmMetrics&) const = default;
};

// NVLink and PCIe counters from nvmlDeviceGetFieldValues, lifetime (deltas in Rates::gpus).
struct GpuInterconnect {
    Counter nvlink_link_count;
    Counter nvlink_tx_bytes, nvlink_rx_bytes;  // NVLINK_THROUGHPUT_DATA_TX/RX (KiB) x 1024, all links
    Counter nvlink_crc_errors, nvlink_replay_errors, nvlink_recovery_errors;  // *_COUNT_TOTAL
    Counter pcie_replay_count;
    Counter pcie_tx_bytes, pcie_rx_bytes;  // NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES
    bool operator==(const GpuInterconnect&) const = default;
};

// The PCIe link between host and GPU (NVML): the generation and lane count it runs at now, and the most
// this GPU supports in this slot. An idle GPU lowers its generation to save power; fewer lanes than its
// most is a fault (riser, slot, retimer, a badly seated card).
struct PcieLink {
    Counter generation, width;
    Counter max_generation, max_width;
    bool operator==(const PcieLink&) const = default;
};

// A MIG instance reported as its own Gpu entry: NVML gives no utilization for it, and power,
// temperature and clocks are the parent GPU's (gauges_from_parent says so).
struct MigInstance {
    std::string parent_uuid, parent_pci_bus_id;
    int parent_index = -1;
    std::optional<int> gpu_instance_id, compute_instance_id;
    bool gauges_from_parent = true;
    bool operator==(const MigInstance&) const = default;
};

// A process NVML lists on a GPU (nvmlDeviceGetComputeRunningProcesses_v3), placed by its cgroup.
struct GpuProcess {
    std::int64_t pid = 0;
    Counter used_memory_bytes;  // null when NVML cannot tell (Windows WDDM, some MIG setups)
    std::optional<int> gpu_instance_id, compute_instance_id;
    // Filled by the cgroup source from <procfs>/<pid>/cgroup and status; "" / nullopt when unreadable.
    std::string cgroup;  // "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0"
    std::string job_id;  // the job_* component of that path, "" when not a Slurm job's
    std::optional<std::uint32_t> uid;
    std::string owner;  // step | job | other_job | other_user | unknown
    bool operator==(const GpuProcess&) const = default;
};

struct Gpu {
    int index = -1;                              // the source's own index (NVML index, drm card number)
    std::string uuid, pci_bus_id, name, vendor;  // vendor: nvidia | amd
    std::optional<int> minor_number;             // /dev/nvidia<minor>
    Gauge utilization_pct;
    Counter memory_used_bytes, memory_total_bytes;
    Gauge temperature_c, power_w, power_limit_w;
    Counter sm_clock_mhz, max_sm_clock_mhz;
    Counter throttle_reasons_mask;                     // raw NVML clocks-event bitmask
    std::vector<std::string> throttle_reasons;         // decoded names
    Counter violation_power_ns, violation_thermal_ns;  // NVML violation time counters, lifetime
    Counter ecc_uncorrected;                           // volatile uncorrected ECC errors
    Counter ecc_corrected;
    Counter remapped_rows_pending, remapped_rows_failure;  // 0/1 flags from NVML
    Counter energy_mj;                                     // total energy since driver load
    std::vector<int> xid;  // Xid codes seen for this GPU during the last interval
    // Depth (issue 15); absent when the source could not ask (nvidia-smi, amdgpu, older drivers).
    std::optional<GpmMetrics> gpm;
    std::optional<GpuInterconnect> interconnect;
    std::optional<MigInstance> mig;
    std::optional<std::vector<GpuProcess>> processes;
    std::optional<PcieLink> pcie_link;  // absent when NVML did not say (other sources, MIG instances)
    bool operator==(const Gpu&) const = default;
};

// An Xid line from the kernel log (kmsg), already mapped to a GPU when the PCI id matched one.
struct XidEvent {
    int code = 0;
    std::string pci_bus_id;
    int gpu_index = -1;
    std::string severity;  // critical | warning | info (node-health-anchors.md section 6)
    std::string message;   // the rest of the kernel line
    bool operator==(const XidEvent&) const = default;
};

// The job's own cgroup (Slurm's step_* / job_* directory): what this job used, where /proc numbers are
// the whole node's. cgroup v2 (v1 fills what it has: no pressure, no throttled time in usec).
struct JobCgroup {
    int version = 2;
    std::string path;   // relative to the cgroup mount: /system.slice/slurmstepd.scope/job_42/step_0
    std::string scope;  // step | job (which directory the walk up from /proc/self/cgroup stopped at)
    std::string job_id, step_id;  // from the job_* / step_* names (26.05: the SLUID)
    Counter memory_current_bytes, memory_peak_bytes, memory_max_bytes;  // max null when "max"
    Counter memory_oom_events, memory_oom_kill_events;                  // memory.events oom, oom_kill
    Counter cpu_usage_usec, cpu_user_usec, cpu_system_usec;
    Counter cpu_nr_periods, cpu_nr_throttled, cpu_throttled_usec;  // present with the cpu controller
    Psi psi;  // <cgroup>/{cpu,io,memory}.pressure, same fields as the node's
    bool operator==(const JobCgroup&) const = default;
};

// A promise a producer that updates one Snapshot in place makes about it (the v2 timeline reader, which
// writes each changed counter straight into the sample it lends): as long as it hands out the same nonzero
// id, it hands out the same Snapshot object, whose counter-bearing parts (host_stats, job_cgroup,
// interfaces, rdma, gpus) had only counter and gauge values written since the last sample: no element,
// entity, map entry or optional part added, removed, moved or re-read (time, context, events and the
// rest may change freely). Any other change gets a fresh id; the default, 0, promises nothing. A consumer
// (RatesTracker) may then keep pointers to the counters from one call to the next.
struct SnapshotShape {
    std::uint64_t id = 0;
    // With `moving_known`, also: under this id only the counters in `moving` (pointers into the sample)
    // may change value; every other counter keeps the value it had when the id was first handed out.
    // (The v2 reader: the counters its "keys" list, each record moves only those.) Read during the call.
    bool moving_known = false;
    std::span<const Counter* const> moving;
    static SnapshotShape fresh();  // an id no other call returned, in this process
};

struct Snapshot {
    double time = 0;  // seconds since the epoch, UTC
    std::string host;
    JobContext context;
    HostStats host_stats;
    std::vector<NetInterface> interfaces;
    std::vector<RdmaPort> rdma;
    std::vector<Gpu> gpus;
    std::vector<XidEvent> xid_events;
    std::optional<JobCgroup> job_cgroup;  // null when this process is not in a Slurm job cgroup
    NcclState nccl;  // RAS / Inspector / log / nccl-tests evidence of this sample (model/nccl.h)
    std::vector<std::string> warnings;  // one per missing/unreadable/garbage input, naming the file/device
    // Collectors that failed or overran their deadline this sample (name -> why); drives UNKNOWN.
    std::map<std::string, std::string> collector_failures;
    bool operator==(const Snapshot&) const = default;
};

// The descriptions (fields.h): each struct's members in the order its JSON writes them, with their keys
// and flags. A member missing here is neither written, read, rated nor compared by the timeline.
namespace fields {

template <>
struct Description<JobContext> {
    using C = JobContext;
    static constexpr auto fields = std::tuple{
        field<&C::scheduler>("scheduler"),
        field<&C::job_id>("job_id"),
        field<&C::step_id>("step_id"),
        field<&C::job_name>("job_name"),
        field<&C::user>("user"),
        field<&C::nodelist>("nodelist"),
        field<&C::node_id>("node_id"),
        field<&C::gpus>("gpus"),
        field<&C::visible_devices>("visible_devices"),
        field<&C::pod>("pod"),
        field<&C::namespace_name>("namespace"),
    };
};

template <>
struct Description<Psi> {
    using P = Psi;
    static constexpr auto fields = std::tuple{
        field<&P::cpu_some_avg10>("cpu_some_avg10", kMoving),
        field<&P::cpu_some_avg60>("cpu_some_avg60", kMoving),
        field<&P::io_some_avg10>("io_some_avg10", kMoving),
        field<&P::io_some_avg60>("io_some_avg60", kMoving),
        field<&P::io_full_avg10>("io_full_avg10", kMoving),
        field<&P::io_full_avg60>("io_full_avg60", kMoving),
        field<&P::memory_some_avg10>("memory_some_avg10", kMoving),
        field<&P::memory_some_avg60>("memory_some_avg60", kMoving),
        field<&P::memory_full_avg10>("memory_full_avg10", kMoving),
        field<&P::memory_full_avg60>("memory_full_avg60", kMoving),
        field<&P::cpu_some_total_us>("cpu_some_total_us", kMoving | kRate),
        field<&P::io_some_total_us>("io_some_total_us", kMoving | kNodeRate),
        field<&P::io_full_total_us>("io_full_total_us", kMoving | kRate),
        field<&P::memory_some_total_us>("memory_some_total_us", kMoving | kNodeRate),
        field<&P::memory_full_total_us>("memory_full_total_us", kMoving | kRate),
    };
};

template <>
struct Description<HostStats> {
    using H = HostStats;
    static constexpr auto fields = std::tuple{
        field<&H::load1>("load1", kMoving),
        field<&H::load5>("load5", kMoving),
        field<&H::load15>("load15", kMoving),
        field<&H::mem_total_bytes>("mem_total_bytes", kMoving),
        field<&H::mem_available_bytes>("mem_available_bytes", kMoving),
        field<&H::procs_running>("procs_running", kMoving),
        field<&H::procs_blocked>("procs_blocked", kMoving),
        field<&H::oom_kills>("oom_kills", kMoving | kRate),
        field<&H::psi>("psi", kRate, "psi_", kRate | kNodeRate),
    };
};

template <>
struct Description<NetInterface> {
    using I = NetInterface;
    static constexpr unsigned kCounter = kMoving | kRate;
    static constexpr auto fields = std::tuple{
        field<&I::name>("name"),
        field<&I::rx_bytes>("rx_bytes", kCounter),
        field<&I::rx_packets>("rx_packets", kCounter),
        field<&I::rx_errors>("rx_errors", kCounter),
        field<&I::rx_dropped>("rx_dropped", kCounter),
        field<&I::rx_fifo>("rx_fifo", kCounter),
        field<&I::rx_frame>("rx_frame", kCounter),
        field<&I::rx_compressed>("rx_compressed", kCounter),
        field<&I::rx_multicast>("rx_multicast", kCounter),
        field<&I::tx_bytes>("tx_bytes", kCounter),
        field<&I::tx_packets>("tx_packets", kCounter),
        field<&I::tx_errors>("tx_errors", kCounter),
        field<&I::tx_dropped>("tx_dropped", kCounter),
        field<&I::tx_fifo>("tx_fifo", kCounter),
        field<&I::tx_colls>("tx_colls", kCounter),
        field<&I::tx_carrier>("tx_carrier", kCounter),
        field<&I::tx_compressed>("tx_compressed", kCounter),
        field<&I::pause>("pause", kMoving),  // rated by name with the row (rates.cc)
    };
};

// The port's counters are rated from its maps by name (rates.cc), not from rx_bytes / tx_bytes.
template <>
struct Description<RdmaPort> {
    using R = RdmaPort;
    static constexpr auto fields = std::tuple{
        field<&R::device>("device"),
        field<&R::port>("port"),
        field<&R::state>("state"),
        field<&R::phys_state>("phys_state"),
        field<&R::rate_gbps>("rate_gbps"),
        field<&R::link_layer>("link_layer"),
        field<&R::netdev>("netdev"),
        field<&R::rx_bytes>("rx_bytes", kMoving),
        field<&R::tx_bytes>("tx_bytes", kMoving),
        field<&R::counters>("counters", kMoving),
        field<&R::hw_counters>("hw_counters", kMoving),
    };
};

template <>
struct Description<GpmMetrics> {
    using G = GpmMetrics;
    static constexpr auto fields = std::tuple{
        field<&G::sm_active_pct>("sm_active_pct"),
        field<&G::sm_occupancy_pct>("sm_occupancy_pct"),
        field<&G::tensor_active_pct>("tensor_active_pct"),
        field<&G::dram_bandwidth_pct>("dram_bandwidth_pct"),
        field<&G::pcie_tx_mib_per_s>("pcie_tx_mib_per_s"),
        field<&G::pcie_rx_mib_per_s>("pcie_rx_mib_per_s"),
        field<&G::nvlink_tx_mib_per_s>("nvlink_tx_mib_per_s"),
        field<&G::nvlink_rx_mib_per_s>("nvlink_rx_mib_per_s"),
    };
};

template <>
struct Description<GpuInterconnect> {
    using L = GpuInterconnect;
    static constexpr auto fields = std::tuple{
        field<&L::nvlink_link_count>("nvlink_link_count"),
        field<&L::nvlink_tx_bytes>("nvlink_tx_bytes", kRate),
        field<&L::nvlink_rx_bytes>("nvlink_rx_bytes", kRate),
        field<&L::nvlink_crc_errors>("nvlink_crc_errors", kRate),
        field<&L::nvlink_replay_errors>("nvlink_replay_errors", kRate),
        field<&L::nvlink_recovery_errors>("nvlink_recovery_errors", kRate),
        field<&L::pcie_replay_count>("pcie_replay_count", kRate),
        field<&L::pcie_tx_bytes>("pcie_tx_bytes", kRate),
        field<&L::pcie_rx_bytes>("pcie_rx_bytes", kRate),
    };
};

template <>
struct Description<PcieLink> {
    using L = PcieLink;
    static constexpr auto fields = std::tuple{
        field<&L::generation>("generation"),
        field<&L::width>("width"),
        field<&L::max_generation>("max_generation"),
        field<&L::max_width>("max_width"),
    };
};

template <>
struct Description<MigInstance> {
    using M = MigInstance;
    static constexpr auto fields = std::tuple{
        field<&M::parent_uuid>("parent_uuid"),
        field<&M::parent_pci_bus_id>("parent_pci_bus_id"),
        field<&M::parent_index>("parent_index"),
        field<&M::gpu_instance_id>("gpu_instance_id"),
        field<&M::compute_instance_id>("compute_instance_id"),
        field<&M::gauges_from_parent>("gauges_from_parent"),
    };
};

template <>
struct Description<GpuProcess> {
    using P = GpuProcess;
    static constexpr auto fields = std::tuple{
        field<&P::pid>("pid"),
        field<&P::used_memory_bytes>("used_memory_bytes"),
        field<&P::gpu_instance_id>("gpu_instance_id"),
        field<&P::compute_instance_id>("compute_instance_id"),
        field<&P::cgroup>("cgroup"),
        field<&P::job_id>("job_id"),
        field<&P::uid>("uid"),
        field<&P::owner>("owner"),
    };
};

template <>
struct Description<Gpu> {
    static constexpr unsigned kCounter = kMoving | kRate;
    static constexpr auto fields = std::tuple{
        field<&Gpu::index>("index"),
        field<&Gpu::uuid>("uuid"),
        field<&Gpu::pci_bus_id>("pci_bus_id"),
        field<&Gpu::name>("name"),
        field<&Gpu::vendor>("vendor"),
        field<&Gpu::minor_number>("minor_number"),
        field<&Gpu::utilization_pct>("utilization_pct", kMoving),
        field<&Gpu::memory_used_bytes>("memory_used_bytes", kMoving),
        field<&Gpu::memory_total_bytes>("memory_total_bytes"),
        field<&Gpu::temperature_c>("temperature_c", kMoving),
        field<&Gpu::power_w>("power_w", kMoving),
        field<&Gpu::power_limit_w>("power_limit_w", kMoving),
        field<&Gpu::sm_clock_mhz>("sm_clock_mhz", kMoving),
        field<&Gpu::max_sm_clock_mhz>("max_sm_clock_mhz"),
        field<&Gpu::throttle_reasons_mask>("throttle_reasons_mask", kMoving),
        field<&Gpu::throttle_reasons>("throttle_reasons"),
        field<&Gpu::violation_power_ns>("violation_power_ns", kCounter),
        field<&Gpu::violation_thermal_ns>("violation_thermal_ns", kCounter),
        field<&Gpu::ecc_uncorrected>("ecc_uncorrected", kCounter),
        field<&Gpu::ecc_corrected>("ecc_corrected", kCounter),
        field<&Gpu::remapped_rows_pending>("remapped_rows_pending"),
        field<&Gpu::remapped_rows_failure>("remapped_rows_failure"),
        field<&Gpu::energy_mj>("energy_mj", kCounter),
        field<&Gpu::xid>("xid"),
        // Optional parts, written only when the source filled them ("not measured" is an absent key).
        field<&Gpu::gpm>("gpm"),
        field<&Gpu::interconnect>("interconnect", kRate),  // NVLink / PCIe counters, rated under their keys
        field<&Gpu::mig>("mig"),
        field<&Gpu::processes>("processes"),
        field<&Gpu::pcie_link>("pcie_link"),
    };
};

template <>
struct Description<XidEvent> {
    using X = XidEvent;
    static constexpr auto fields = std::tuple{
        field<&X::code>("code"),           field<&X::pci_bus_id>("pci_bus_id"),
        field<&X::gpu_index>("gpu_index"), field<&X::severity>("severity"),
        field<&X::message>("message"),
    };
};

template <>
struct Description<JobCgroup> {
    using C = JobCgroup;
    static constexpr auto fields = std::tuple{
        field<&C::version>("version"),
        field<&C::path>("path"),
        field<&C::scope>("scope"),
        field<&C::job_id>("job_id"),
        field<&C::step_id>("step_id"),
        field<&C::memory_current_bytes>("memory_current_bytes"),
        field<&C::memory_peak_bytes>("memory_peak_bytes"),
        field<&C::memory_max_bytes>("memory_max_bytes"),
        field<&C::memory_oom_events>("memory_oom_events", kRate),
        field<&C::memory_oom_kill_events>("memory_oom_kill_events", kRate),
        field<&C::cpu_usage_usec>("cpu_usage_usec", kRate),
        field<&C::cpu_user_usec>("cpu_user_usec"),
        field<&C::cpu_system_usec>("cpu_system_usec"),
        field<&C::cpu_nr_periods>("cpu_nr_periods", kRate),
        field<&C::cpu_nr_throttled>("cpu_nr_throttled", kRate),
        field<&C::cpu_throttled_usec>("cpu_throttled_usec", kRate),
        field<&C::psi>("psi", kRate, "psi_"),  // the node's psi_* rates but io_some and memory_some
    };
};

}  // namespace fields

}  // namespace stallscope
