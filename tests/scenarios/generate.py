#!/usr/bin/env python3
"""Writes the synthetic scenario timelines (tests/scenarios/*.jsonl).

Each scenario is a short timeline of snapshot lines (schema stallscope.snapshot/1, `time` in epoch
seconds) on one 8-GPU node with one RoCE port (mlx5_0/1 behind ens1f0) and a TCP interface (eth0).
Only the fields the rules read are present. The expected verdicts live next to the runner in
scenario_test.cc. Re-run after editing:  python3 tests/scenarios/generate.py
"""
import copy
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1_790_000_000
GIB = 1 << 30


def base(i, t, rng):
    """Healthy training: GPUs busy, RoCE traffic flowing with a little background ECN, host calm."""
    k = i + 1
    gpus = []
    for g in range(8):
        gpus.append({
            "index": g, "uuid": f"GPU-0000000{g}-aaaa-bbbb-cccc-dddddddddddd",
            "pci_bus_id": f"00000000:{0x18 + g:02X}:00.0", "vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3",
            "utilization_pct": rng.choice([95, 96, 97, 98, 99, 100]),
            "memory_used_bytes": 62 * GIB, "memory_total_bytes": 80 * GIB,
            "temperature_c": 62 + rng.randint(0, 4), "power_w": 540 + rng.randint(0, 60), "power_limit_w": 700,
            "sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980, "throttle_reasons": ["sw_power_cap"],
            "ecc_uncorrected": 0, "remapped_rows_pending": 0, "remapped_rows_failure": 0,
            "energy_mj": 1_000_000 + k * 5_600_000 + g, "xid": [],
        })
    rx_pkts = k * 48_000_000
    rdma = [{
        "device": "mlx5_0", "port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 400,
        "link_layer": "Ethernet", "netdev": "ens1f0",
        "counters": {"port_rcv_packets": rx_pkts, "port_xmit_packets": rx_pkts + 7, "port_rcv_data": k * 9_000_000_000,
                     "port_xmit_data": k * 9_100_000_000, "link_downed": 1, "link_error_recovery": 0,
                     "symbol_error": 0},
        "hw_counters": {"rp_cnp_handled": 120_000 + k * 40, "np_ecn_marked_roce_packets": 80_000 + k * 25,
                        "np_cnp_sent": 80_000 + k * 25, "rp_cnp_ignored": 0, "out_of_sequence": 12,
                        "packet_seq_err": 3, "duplicate_request": 0, "implied_nak_seq_err": 0,
                        "local_ack_timeout_err": 0, "rnr_nak_retry_err": 0, "req_cqe_error": 0,
                        "resp_cqe_error": 0, "out_of_buffer": 0},
    }]
    interfaces = [
        {"name": "lo", "rx_packets": k * 100, "tx_packets": k * 100, "rx_errors": 0, "tx_errors": 0,
         "rx_dropped": 0, "tx_dropped": 0},
        {"name": "eth0", "rx_packets": k * 20_000, "tx_packets": k * 18_000, "rx_errors": 0, "tx_errors": 0,
         "rx_dropped": 40, "tx_dropped": 0},
        {"name": "ens1f0", "rx_packets": k * 1000, "tx_packets": k * 1000, "rx_errors": 0, "tx_errors": 0,
         "rx_dropped": 0, "tx_dropped": 0,
         "pause": {"rx_prio3_pause": k * 30, "rx_prio3_pause_duration": k * 2_000,
                   "tx_prio3_pause": k * 5, "tx_prio3_pause_duration": k * 300,
                   "tx_pause_storm_warning_events": 0, "tx_pause_storm_error_events": 0,
                   "rx_discards_phy": 0}},
    ]
    host = {"load1": 42.0, "mem_total_bytes": 2048 * GIB, "mem_available_bytes": 1500 * GIB,
            "procs_running": 40, "procs_blocked": 0, "oom_kills": 3,
            "psi": {"cpu_some_avg10": 8.0, "io_some_avg10": 0.5, "io_full_avg10": 0.1,
                    "memory_some_avg10": 0.0, "memory_full_avg10": 0.0}}
    return {"schema": "stallscope.snapshot/1", "time": t, "host": "gpu-node-17",
            "context": {"scheduler": "slurm", "job_id": "4242", "step_id": "0"},
            "host_stats": host, "interfaces": interfaces, "rdma": rdma, "gpus": gpus,
            "xid_events": [], "collector_failures": {}}


def timeline(n, interval=10, seed=1, edit=None):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        s = base(i, T0 + i * interval, rng)
        if edit:
            edit(i, s)
        out.append(s)
    return out


def port(s):
    return s["rdma"][0]


def iface(s, name):
    return next(x for x in s["interfaces"] if x["name"] == name)


def add(d, key, value):
    d[key] = d[key] + value


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
}


def main():
    for name, spec in SCENARIOS.items():
        lines = timeline(**spec)
        with open(os.path.join(HERE, name + ".jsonl"), "w") as f:
            for line in lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
