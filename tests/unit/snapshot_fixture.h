// A snapshot with every field set to a distinct, awkward value, shared by the JSON round-trip tests.
#pragma once

#include "libstallscope/model/snapshot.h"

namespace stallscope::test {

// Every field set to a distinct, awkward value: a field the writer or reader forgets breaks equality.
inline Snapshot full_snapshot() {
    Snapshot s;
    s.time = 1795160401.123456789;
    s.host = "gpu-node-07";
    s.context = {"slurm", "4242",     "0",        "train", "alice", "gpu-node-[07-08]",
                 "0",     {"0", "1"}, {"0", "1"}, "",      ""};
    auto& h = s.host_stats;
    h.load1 = 1.25;
    h.load5 = 0.1 + 0.2;  // not representable exactly: must still round-trip
    h.mem_total_bytes = 2199023255552ull;
    h.mem_available_bytes = 18446744073709551615ull;
    h.procs_blocked = 3;
    h.oom_kills = 1;
    h.psi.memory_full_avg10 = 12.5;
    h.psi.io_full_total_us = 123456789;
    NetInterface eth;
    eth.name = "eth0";
    eth.rx_bytes = 10;
    eth.tx_carrier = 2;
    eth.pause = {{"rx_prio3_pause", 77}, {"tx_pause_storm_warning_events", std::nullopt}};
    s.interfaces = {eth};
    RdmaPort p;
    p.device = "mlx5_0";
    p.port = 1;
    p.state = "ACTIVE";
    p.phys_state = "LinkUp";
    p.rate_gbps = 2.5;
    p.link_layer = "Ethernet";
    p.netdev = "ens1f0np0";
    p.counters = {{"port_rcv_data", 100}, {"symbol_error", std::nullopt}};
    p.hw_counters = {{"np_cnp_sent", 5}};
    p.rx_bytes = 400;
    s.rdma = {p};
    Gpu g;
    g.index = 3;
    g.uuid = "GPU-1";
    g.pci_bus_id = "00000000:18:00.0";
    g.name = "NVIDIA H100 80GB HBM3";
    g.vendor = "nvidia";
    g.minor_number = 3;
    g.utilization_pct = 97;
    g.memory_used_bytes = 1;
    g.memory_total_bytes = 2;
    g.temperature_c = 71;
    g.power_w = 612.345;
    g.power_limit_w = 700;
    g.sm_clock_mhz = 1980;
    g.max_sm_clock_mhz = 1980;
    g.throttle_reasons_mask = 0x4;
    g.throttle_reasons = {"sw_power_cap"};
    g.violation_power_ns = 9;
    g.violation_thermal_ns = 8;
    g.ecc_uncorrected = 0;
    g.ecc_corrected = 4;
    g.remapped_rows_pending = 1;
    g.remapped_rows_failure = 0;
    g.energy_mj = 123456;
    g.xid = {79};
    s.gpus = {g};
    s.xid_events = {{79, "0000:18:00", 3, "critical", "GPU has fallen off the bus."}};
    s.warnings = {"mlx5_0/1: counters/symbol_error: not a number 'x'"};
    s.collector_failures = {{"nvml", "timed out after 5 s"}};
    NcclRasReport ras;
    ras.time = 1795160400.5;
    ras.outcome = "truncated";
    ras.detail = "127.0.0.1:28028: STATUS report ends before its Warnings section";
    ras.format = "json";
    ras.nccl_version = "2.28.9";
    ras.partial = true;
    ras.collection_seconds = 2.051;
    ras.timeouts = 2;
    ras.communicators_count = 3;
    ras.dead_processes = {{-1, "10.0.0.2", 3487984, "5"}};
    ras.missing_processes = {{-1, "10.0.0.3", 42, "0,1"}};
    NcclCommunicator comm;
    comm.hash = "cf264af53edbe986";
    comm.size = 16;
    comm.ranks_answered = 15;
    comm.status = "ABORT";
    comm.missing = {{{13, "10.0.0.2", 3487984, "5"}, true, false}};
    comm.errors = {{{12, "10.0.0.2", 501877, "4"}, "Remote process error", 6, true}};
    comm.mismatches = {{"AllReduce", 6650, {{9, 6649}}, 2}};
    comm.max_counts = {{"AllReduce", 6650}, {"AllGather", 18446744073709551615ull}};
    ras.communicators = {comm};
    s.nccl.ras = {ras};
    s.nccl.ras_events = {
        {"2026-07-14 09:22:05", "LIFECYCLE", "PEER_DEAD", {-1, "10.0.0.2", 3487984, "5"}, ""}};
    s.nccl.inspector.collectives = {
        {"cf264af53edbe986", "AllReduce", 268435456, 2, 16, "node002", 12, 0.1 + 0.2, 910.5}};
    s.nccl.inspector.stragglers = {{"cf264af53edbe986", "AllReduce", 2, "node002", 10, 9, 487.25}};
    NcclLogEvent log;
    log.kind = "ib_wc_error";
    log.file = "/scratch/j/nccl.node002.1.log";
    log.host = "node002";
    log.rank = 12;
    log.pid = 3490012;
    log.fields = {{"status", "12"}, {"peer", "10.0.0.1"}};
    log.line = "NET/IB: Got completion from peer 10.0.0.1<35162> with status=12";
    s.nccl.log_events = {log};
    NcclTestResult test;
    test.outcome = "wrong_data";
    test.exit_code = 7;
    test.command = "all_reduce_perf -b 32M";
    test.seconds = 12.25;
    test.avg_busbw_gbs = 113.095;
    test.peak_busbw_gbs = 372.0;
    test.peak_size_bytes = 8589934592ull;
    test.wrong = 3;
    test.rows = 16;
    test.errors = {"node002: Test NCCL failure common.cu:401 'remote process exited'"};
    s.nccl.nccl_test = test;
    return s;
}

}  // namespace stallscope::test
