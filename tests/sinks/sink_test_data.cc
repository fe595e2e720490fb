#include "sink_test_data.h"

#include <string>

namespace stallscope::test {

namespace {

const char* const kPortCounters[] = {
    "port_rcv_packets", "port_xmit_packets", "port_xmit_wait", "port_xmit_discards", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_rcv_constraint_errors",
    "port_xmit_constraint_errors", "symbol_error", "link_error_recovery", "link_downed",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors",
    // not allow-listed:
    "VL15_dropped", "port_rcv_data", "port_xmit_data", "unicast_rcv_packets"};

const char* const kHwCounters[] = {
    "np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored", "roce_slow_restart",
    "out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "duplicate_request",
    "roce_adp_retrans", "roce_adp_retrans_to", "rx_icrc_encapsulated", "out_of_buffer", "rnr_nak_retry_err",
    "req_cqe_error", "resp_cqe_error", "req_remote_access_errors", "resp_remote_access_errors",
    "req_remote_invalid_request", "resp_local_length_error",
    // not allow-listed:
    "lifespan", "rx_write_requests", "rx_read_requests", "roce_slow_restart_cnps"};

const char* const kEthtool[] = {
    "rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer", "rx_buffer_passed_thres_phy",
    "outbound_pci_buffer_overflow", "outbound_pci_stalled_rd_events", "outbound_pci_stalled_wr_events",
    "link_down_events_phy", "rx_pcs_symbol_err_phy", "rx_crc_errors_phy",
    // not allow-listed / pause fields handled separately:
    "rx_vport_unicast_packets", "tx_pause_storm_warning_events", "tx_pause_storm_error_events"};

NetInterface interface(const std::string& name, std::uint64_t base) {
    NetInterface i;
    i.name = name;
    i.rx_bytes = base * 1000;
    i.rx_packets = base * 10;
    i.rx_errors = 1;
    i.rx_dropped = 2;
    i.tx_bytes = base * 2000;
    i.tx_packets = base * 20;
    i.tx_errors = 3;
    i.tx_dropped = 4;
    return i;
}

}  // namespace

Snapshot full_snapshot(double time, NodeShape shape) {
    Snapshot s;
    s.time = time;
    s.host = "gpu-node-07";
    s.context.scheduler = "slurm";
    s.context.job_id = "4242";
    s.context.step_id = "0";
    for (std::size_t n = 0; n < shape.gpus; ++n) {
        Gpu g;
        g.index = static_cast<int>(n);
        g.uuid = "GPU-0000000" + std::to_string(n);
        g.pci_bus_id = "00000000:" + std::to_string(10 + n) + ":00.0";
        g.name = "NVIDIA H100 80GB HBM3";
        g.vendor = "nvidia";
        g.utilization_pct = 97;
        g.memory_used_bytes = 70ULL << 30;
        g.memory_total_bytes = 80ULL << 30;
        g.temperature_c = 60.0 + static_cast<double>(n);
        g.power_w = 400.5 + static_cast<double>(n);
        g.power_limit_w = 700;
        g.sm_clock_mhz = 1755;
        g.max_sm_clock_mhz = 1980;
        g.throttle_reasons_mask = 0x20;  // sw_thermal_slowdown
        g.throttle_reasons = {"sw_thermal_slowdown"};
        g.violation_power_ns = 2'500'000'000ULL;
        g.violation_thermal_ns = 1'000'000'000ULL;
        g.ecc_uncorrected = 0;
        g.ecc_corrected = 5;
        g.remapped_rows_pending = 0;
        g.remapped_rows_failure = 0;
        g.energy_mj = 123'456'000;
        // Depth (issue 39): every GPU carries GPM, NVLink/PCIe counters, a MIG identity and processes
        // of this step, of another job and of another user, so every depth series is present.
        GpmMetrics gpm;
        gpm.sm_active_pct = 12.5, gpm.sm_occupancy_pct = 8, gpm.tensor_active_pct = 0,
        gpm.dram_bandwidth_pct = 3;
        gpm.pcie_tx_mib_per_s = 10, gpm.pcie_rx_mib_per_s = 20, gpm.nvlink_tx_mib_per_s = 1024;
        gpm.nvlink_rx_mib_per_s = 2048;
        g.gpm = gpm;
        GpuInterconnect link;
        link.nvlink_link_count = 18, link.nvlink_tx_bytes = 1ULL << 40, link.nvlink_rx_bytes = 2ULL << 40;
        link.nvlink_crc_errors = 7 * n, link.nvlink_replay_errors = 1, link.nvlink_recovery_errors = 0;
        link.pcie_replay_count = 2, link.pcie_tx_bytes = 1ULL << 30, link.pcie_rx_bytes = 3ULL << 30;
        g.interconnect = link;
        MigInstance mig;
        mig.parent_uuid = "GPU-parent", mig.parent_index = static_cast<int>(n / 7);
        mig.gpu_instance_id = static_cast<int>(n % 7), mig.compute_instance_id = 0;
        g.mig = mig;
        std::vector<GpuProcess> processes(3);
        processes[0].pid = 100, processes[0].used_memory_bytes = 60ULL << 30, processes[0].owner = "step";
        processes[1].pid = 200 + static_cast<std::int64_t>(n), processes[1].used_memory_bytes = 1ULL << 30;
        processes[1].owner = "other_job", processes[1].job_id = "9999";
        processes[2].pid = 300, processes[2].owner = "other_user";  // no memory figure from NVML
        g.processes = processes;
        s.gpus.push_back(g);
    }
    for (std::size_t n = 0; n < shape.rdma_ports; ++n) {
        RdmaPort p;
        p.device = "mlx5_" + std::to_string(n);
        p.port = 1;
        p.state = "ACTIVE";
        p.phys_state = "LinkUp";
        p.rate_gbps = 400;
        p.link_layer = "Ethernet";
        p.netdev = "ens" + std::to_string(n) + "np0";
        for (const char* c : kPortCounters) p.counters[c] = 1000 + n;
        for (const char* c : kHwCounters) p.hw_counters[c] = 10 + n;
        p.rx_bytes = 4'000'000'000ULL + n;
        p.tx_bytes = 8'000'000'000ULL + n;
        s.rdma.push_back(p);
    }
    s.interfaces.push_back(interface("lo", 1));
    for (std::size_t n = 0; n < shape.interfaces; ++n) {
        NetInterface i = interface(
            n < shape.rdma_ports ? "ens" + std::to_string(n) + "np0" : "eth" + std::to_string(n), 100 + n);
        for (const char* dir : {"rx", "tx"}) {
            for (int prio = 0; prio < 8; ++prio) {
                std::string key = std::string(dir) + "_prio" + std::to_string(prio) + "_pause";
                i.pause[key] = 100 + prio;
                i.pause[key + "_duration"] = 1'500'000;  // 1.5 s in microseconds
                i.pause[key + "_transition"] = 7;        // not exported
            }
            i.pause[std::string(dir) + "_global_pause"] = 11;
            i.pause[std::string(dir) + "_pause"] = 99;  // shadowed by *_global_pause: one series only
            i.pause[std::string(dir) + "_global_pause_duration"] = 250'000;
        }
        for (const char* c : kEthtool) i.pause[c] = 3;
        s.interfaces.push_back(i);
    }
    JobCgroup job;
    job.path = "/system.slice/slurmstepd.scope/job_4242/step_0";
    job.scope = "step", job.job_id = "4242", job.step_id = "0";
    job.memory_current_bytes = 40ULL << 30, job.memory_peak_bytes = 60ULL << 30,
    job.memory_max_bytes = 64ULL << 30;
    job.memory_oom_events = 2, job.memory_oom_kill_events = 1;
    job.cpu_usage_usec = 5'000'000, job.cpu_user_usec = 4'000'000, job.cpu_system_usec = 1'000'000;
    job.cpu_nr_periods = 100, job.cpu_nr_throttled = 25, job.cpu_throttled_usec = 2'500'000;
    Psi& psi = job.psi;
    psi.cpu_some_avg10 = 50, psi.cpu_some_avg60 = 40, psi.io_some_avg10 = 1, psi.io_some_avg60 = 1;
    psi.io_full_avg10 = 0, psi.io_full_avg60 = 0, psi.memory_some_avg10 = 2, psi.memory_some_avg60 = 2;
    psi.memory_full_avg10 = 1, psi.memory_full_avg60 = 1;
    psi.cpu_some_total_us = 3'000'000, psi.io_some_total_us = 10, psi.io_full_total_us = 5;
    psi.memory_some_total_us = 20, psi.memory_full_total_us = 7;
    s.job_cgroup = job;
    s.warnings = {"mlx5_3/1: counters/port_xmit_wait: value saturated at 2^32-1"};
    return s;
}

Profile slow_profile(double first_seen, std::size_t reasons) {
    Profile p;
    p.label = kLabelSlow;
    p.confidence = 0.8;
    p.bottleneck_hint = "network";
    for (std::size_t n = 0; n < reasons; ++n) {
        Reason r;
        if (n == 0) {
            r.code = "fabric_congestion";
            r.category = "fabric";
            r.severity = "warning";
            r.subject = "mlx5_0/1";
            r.message = "mlx5_0/1: 1200 CNPs/s handled (threshold 100/s): the fabric is congested.";
            r.evidence = {{"rp_cnp_handled_per_s", 1200.0},
                          {"threshold_per_s", 100.0},
                          {"port", std::string("mlx5_0/1")}};
        } else if (n % 2 == 1) {
            r.code = "gpu_thermal_throttle";
            r.category = "gpu";
            r.severity = "warning";
            r.subject = "GPU-" + std::to_string(n);
            r.message = "GPU " + std::to_string(n) + " is thermally throttled.";
            r.evidence = {{"temperature_c", 88.0}};
        } else {
            r.code = "nccl_info";
            r.category = "nccl";
            r.severity = "info";
            r.subject = "comm-" + std::to_string(n);
            r.message = "informational";
        }
        r.label = kLabelSlow;
        r.first_seen = first_seen;
        p.reasons.push_back(r);
    }
    return p;
}

}  // namespace stallscope::test
