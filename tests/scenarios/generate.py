#!/usr/bin/env python3
"""Writes the synthetic scenario timelines (tests/scenarios/*.jsonl).

Each scenario is a short timeline of snapshot lines (schema stallscope.snapshot/1, `time` in epoch
seconds) on one 8-GPU node with one RoCE port (mlx5_0/1 behind ens1f0) and a TCP interface (eth0).
Only the fields the rules read are present. The expected verdicts live next to the runner in
scenario_test.cc. The shared node sample lives in scenario_base.py, the issue-13 variants in
scenarios_issue13.py. Re-run after editing:  python3 tests/scenarios/generate.py
"""
import json
import os
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import scenarios_issue13 as i13
from scenario_base import GIB, HERE, add, base, iface, port, timeline


# ---- the scenarios -------------------------------------------------------------------------------------

def cnp_storm(i, s):  # 1500 CNPs/s handled from t=30 on
    if i >= 3:
        add(port(s)["hw_counters"], "rp_cnp_handled", (i - 2) * 15_000)


def pfc_pause_storm(i, s):  # this host backpressures the fabric until the storm watchdog fires
    pause = iface(s, "ens1f0")["pause"]
    if i >= 3:
        add(pause, "tx_prio3_pause_duration", (i - 2) * 4_000_000)  # 40 % of each 10 s interval
        add(pause, "tx_prio3_pause", (i - 2) * 60_000)
        add(pause, "tx_pause_storm_warning_events", 1)
    if i >= 5:
        add(pause, "tx_pause_storm_error_events", 1)
        for g in s["gpus"]:
            g["utilization_pct"] = 20


def rdma_loss(i, s):  # out-of-sequence burst: 20000 per 48M packets ~ 420 ppm
    if i >= 4:
        add(port(s)["hw_counters"], "out_of_sequence", (i - 3) * 20_000)
        add(port(s)["hw_counters"], "packet_seq_err", (i - 3) * 500)


def ack_timeouts(i, s):
    if i >= 4:
        add(port(s)["hw_counters"], "local_ack_timeout_err", 3 * (i - 3))


def link_flap(i, s):  # the port went down and came back between two samples
    if i >= 4:
        add(port(s)["counters"], "link_downed", 1)
        add(port(s)["counters"], "link_error_recovery", 1)


def port_down(i, s):
    if i >= 4:
        p = port(s)
        p["state"], p["phys_state"] = "DOWN", "Polling"
        add(p["counters"], "link_downed", 1)
        frozen = base(3, 0, random.Random(0))["rdma"][0]["counters"]
        for key in ("port_rcv_packets", "port_xmit_packets", "port_rcv_data", "port_xmit_data"):
            p["counters"][key] = frozen[key]


def thermal_throttle(i, s):  # GPU 5: temperature climbs, clocks fall
    g = s["gpus"][5]
    if i >= 3:
        g["temperature_c"] = 70 + (i - 3) * 4
        g["sm_clock_mhz"] = 1980 - (i - 3) * 90
        g["throttle_reasons"] = ["sw_thermal_slowdown"]
        g["power_w"] = 520


def power_brake(i, s):  # the board's power-brake line is asserted on every GPU
    if i >= 2:
        for g in s["gpus"]:
            g["throttle_reasons"] = ["hw_power_brake_slowdown"]
            g["sm_clock_mhz"] = 1100
            g["power_w"] = 310
            g["temperature_c"] = 55


def busy_wait_hang(i, s):  # kernels spin at 100 % "utilization" at idle power; no RDMA traffic
    if i >= 3:
        for g in s["gpus"]:
            g["utilization_pct"] = 100
            g["power_w"] = 92
        frozen = base(2, 0, random.Random(0))["rdma"][0]["counters"]
        for key in ("port_rcv_packets", "port_xmit_packets", "port_rcv_data", "port_xmit_data"):
            port(s)["counters"][key] = frozen[key]


def idle_gpus(i, s):  # GPUs 3 and 6 allocated but never used
    for g in (3, 6):
        s["gpus"][g]["utilization_pct"] = 0
        s["gpus"][g]["power_w"] = 70
        s["gpus"][g]["memory_used_bytes"] = 0


def straggler(i, s):
    if i >= 2:
        s["gpus"][4]["utilization_pct"] = 52
        s["gpus"][4]["power_w"] = 280


def xid_79(i, s):
    if i == 4:
        s["xid_events"] = [{"code": 79, "pci_bus_id": "PCI:0000:1b:00", "gpu_index": -1, "severity": "critical",
                            "message": "GPU has fallen off the bus."}]
    if i >= 5:  # gone from NVML after it fell off the bus
        s["gpus"] = [g for g in s["gpus"] if g["index"] != 3]


def xid_13(i, s):
    if i == 5:
        s["xid_events"] = [{"code": 13, "pci_bus_id": "PCI:0000:1a:00", "gpu_index": 2, "severity": "warning",
                            "message": "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Illegal Address"}]


def ecc_row_remap(i, s):
    g = s["gpus"][6]
    g["ecc_uncorrected"] = 2  # lifetime before the step
    if i >= 4:
        g["ecc_uncorrected"] = 3
        g["remapped_rows_pending"] = 1


def oom_kill(i, s):  # a data-loader worker killed by its cgroup limit (no host-wide pressure)
    if i >= 5:
        s["host_stats"]["oom_kills"] = 4


def memory_pressure(i, s):
    if i >= 2:
        s["host_stats"]["psi"]["memory_some_avg10"] = 60.0
        s["host_stats"]["psi"]["memory_full_avg10"] = 18.0 + i
        s["host_stats"]["mem_available_bytes"] = 160 * GIB
        for g in s["gpus"]:
            g["utilization_pct"] = 45


def tcp_only_eth0(i, s):  # storage/TCP trouble on eth0; the RoCE path is clean
    e = iface(s, "eth0")
    add(e, "rx_dropped", i * 5_000)
    add(e, "rx_errors", i * 200)


def lifetime_high(i, s):  # big lifetime totals that do not move during the step
    p = port(s)
    p["hw_counters"].update({"out_of_sequence": 48_000_000, "packet_seq_err": 9_000_000,
                             "local_ack_timeout_err": 5_123, "rnr_nak_retry_err": 77_000, "req_cqe_error": 12,
                             "rp_cnp_ignored": 400_000})
    p["counters"]["link_downed"] = 17
    iface(s, "ens1f0")["pause"].update({"tx_pause_storm_error_events": 3, "tx_pause_storm_warning_events": 41})
    iface(s, "eth0").update({"rx_dropped": 90_000_000, "rx_errors": 1_200_000})
    s["host_stats"]["oom_kills"] = 57
    for g in s["gpus"]:
        g["ecc_uncorrected"] = 12


def collector_timeout(i, s):
    s["gpus"] = []
    s["collector_failures"] = {"nvml": "timeout after 2 s (nvmlDeviceGetUtilizationRates hung)"}


def stale_counters(i, s):  # the RDMA and NVML readers return the same cached values from t=40 on
    if i >= 2:
        frozen = base(2, 0, random.Random(7))
        port(s)["counters"] = frozen["rdma"][0]["counters"]
        port(s)["hw_counters"] = frozen["rdma"][0]["hw_counters"]
        for g, f in zip(s["gpus"], frozen["gpus"]):
            g["energy_mj"] = f["energy_mj"]


def nccl_hang_with_fabric(i, s):  # RoCE ACK timeouts from t=90; RAS sees rank 9 stuck from t=120; IB WC error
    if i >= 3:
        add(port(s)["hw_counters"], "local_ack_timeout_err", 4 * (i - 2))
    nccl = {}
    if i % 2 == 0:  # RAS STATUS every 60 s from node 0
        comm = {"hash": "27a079b828ff1a75", "size": 16, "ranks_answered": 16, "status": "RUNNING",
                "missing": [], "errors": [], "mismatches": [], "max_counts": {}}
        if i >= 4:
            comm["mismatches"] = [{"function": "AllReduce", "max_count": 6650, "laggards": [[9, 6649]],
                                   "unlisted_laggards": 0}]
        nccl["ras"] = [{"time": s["time"], "outcome": "ok", "detail": "", "format": "text",
                        "nccl_version": "2.30.7", "partial": False, "collection_seconds": 0.006, "timeouts": 0,
                        "communicators_count": 3, "dead_processes": [], "missing_processes": [],
                        "communicators": [comm]}]
    if i == 5:
        nccl["log_events"] = [{"kind": "ib_wc_error", "file": "/scratch/4242/nccl.gpu-node-17.3490012.log",
                               "host": "gpu-node-17", "rank": -1, "pid": 3490012,
                               "fields": {"peer": "10.0.0.1", "status": "12", "hca": "mlx5_0"},
                               "line": "NET/IB: Got completion from peer 10.0.0.1<35162> with status=12 opcode=129 "
                                       "len=0 vendor err 129 (Recv) hca mlx5_0"}]
    if nccl:
        s["nccl"] = nccl


SCENARIOS = {
    "healthy_baseline": dict(n=9),
    "healthy_long": dict(n=40, interval=15, seed=5),
    "cnp_storm": dict(n=9, edit=cnp_storm),
    "pfc_pause_storm": dict(n=9, edit=pfc_pause_storm),
    "rdma_loss": dict(n=9, edit=rdma_loss),
    "ack_timeouts": dict(n=9, edit=ack_timeouts),
    "link_flap": dict(n=9, edit=link_flap),
    "port_down": dict(n=9, edit=port_down),
    "thermal_throttle": dict(n=9, edit=thermal_throttle),
    "power_brake": dict(n=9, edit=power_brake),
    "busy_wait_hang": dict(n=10, edit=busy_wait_hang),
    "idle_gpus_2_of_8": dict(n=12, interval=30, edit=idle_gpus),
    "straggler_gpu": dict(n=9, edit=straggler),
    "xid_79": dict(n=9, edit=xid_79),
    "xid_13": dict(n=9, edit=xid_13),
    "ecc_row_remap_pending": dict(n=9, edit=ecc_row_remap),
    "oom_kill": dict(n=9, edit=oom_kill),
    "memory_pressure": dict(n=9, edit=memory_pressure),
    "tcp_only_eth0": dict(n=9, edit=tcp_only_eth0),
    "lifetime_counters_high": dict(n=9, edit=lifetime_high),
    "collector_timeout": dict(n=9, edit=collector_timeout),
    "stale_counters": dict(n=14, interval=20, edit=stale_counters),
    "nccl_hang_with_fabric": dict(n=9, interval=30, edit=nccl_hang_with_fabric),
    # healthy variants
    "healthy_checkpoint_dips": dict(n=156, interval=10, seed=11, edit=i13.checkpoint_dips),
    "healthy_eval_pauses": dict(n=100, interval=10, seed=12, edit=i13.eval_pauses),
    "healthy_dataloader_warmup": dict(n=40, interval=10, seed=13, edit=i13.dataloader_warmup),
    "healthy_nccl_init": dict(n=30, interval=10, seed=14, edit=i13.nccl_init),
    "healthy_second_step": dict(n=20, interval=10, seed=15, edit=i13.second_step),
    "healthy_sw_power_cap": dict(n=12, interval=10, seed=16, edit=i13.sw_power_cap),
    "healthy_unused_ib_port": dict(n=12, interval=10, seed=17, edit=i13.unused_ib_port),
    "healthy_cnp_bursts": dict(n=100, interval=10, seed=18, edit=i13.cnp_bursts),
    "healthy_four_rails": dict(n=12, interval=10, seed=19, edit=i13.four_rails),
    "healthy_gpu_memory_94pct": dict(n=12, interval=10, seed=20, edit=i13.memory_94pct),
    "healthy_teardown_tail": dict(n=40, interval=10, seed=21, edit=i13.teardown_tail),
    "healthy_ras_missing_once": dict(n=12, interval=30, seed=22, edit=i13.ras_missing_once),
    # faults issue 13 found answered wrongly
    "rail_down_before_step": dict(n=12, interval=10, edit=i13.rail_down_before_step),
    "short_step_port_down": dict(n=6, interval=5, edit=i13.short_port_down),
    "short_step_quiet": dict(n=5, interval=5),
    "nvml_not_loadable": dict(n=12, interval=10, edit=i13.nvml_not_loadable),
    "nvml_util_not_supported": dict(n=12, interval=10, edit=i13.nvml_not_supported),
    "sustained_low_util": dict(n=40, interval=10, edit=i13.sustained_low),
    "frequent_loader_dips": dict(n=60, interval=5, edit=i13.frequent_dips),
    "xid_94_contained": dict(n=9, edit=i13.xid_94),
    "hw_thermal_one_gpu": dict(n=6, interval=10, edit=i13.hw_thermal_one_gpu),
    "ras_rank_missing_persistent": dict(n=10, interval=30, edit=i13.ras_missing_persistent),
    "retry_exceeded": dict(n=9, edit=i13.retry_exceeded),
    "port_degraded": dict(n=9, edit=i13.port_degraded),
    "io_pressure_sustained": dict(n=30, interval=10, edit=i13.io_pressure),
    "row_remap_failure": dict(n=9, edit=i13.row_remap_failure),
    "rnr_naks": dict(n=9, edit=i13.rnr_naks),
}


def main():
    for name, spec in SCENARIOS.items():
        lines = timeline(**spec)
        with open(os.path.join(HERE, name + ".jsonl"), "w") as f:
            for line in lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
