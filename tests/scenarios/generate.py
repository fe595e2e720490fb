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


# ---- healthy variants real jobs have (issue 13): each must be FAST with no warning/critical reason -------

def set_util(s, util, power=None):
    for g in s["gpus"]:
        g["utilization_pct"] = util
        if power is not None:
            g["power_w"] = power


def quiet_rdma(s, i_frozen):
    """RDMA data counters as they were at sample i_frozen (no traffic since)."""
    frozen = base(i_frozen, 0, random.Random(0))["rdma"][0]["counters"]
    for key in ("port_rcv_packets", "port_xmit_packets", "port_rcv_data", "port_xmit_data"):
        port(s)["counters"][key] = frozen[key]


def checkpoint_dips(i, s):
    """Every 5 min (from t=60 s) a 20 s checkpoint: GPUs low, I/O pressure up, storage NIC (eth0) busy."""
    phase = (i - 6) % 30 if i >= 6 else -1
    written = sum(1 for j in range(6, i + 1) if (j - 6) % 30 < 2)  # checkpoint samples so far
    iface(s, "eth0")["tx_packets"] += 4_000_000 * written
    if 0 <= phase < 2:
        set_util(s, 4, power=140)
        s["host_stats"]["psi"]["io_some_avg10"] = 45.0
        s["host_stats"]["psi"]["io_full_avg10"] = 28.0 if phase == 1 else 22.0
    elif phase == 2:  # avg10 decays after the write
        s["host_stats"]["psi"]["io_full_avg10"] = 9.0


def eval_pauses(i, s):
    """Every 10 min a 2 min evaluation pass: forward only, GPUs ~50 %, little all-reduce traffic."""
    if i >= 20 and (i - 20) % 60 < 12:
        for g in s["gpus"]:
            g["utilization_pct"] = 48 + (g["index"] % 3) * 3
            g["power_w"] = 330
        p = port(s)["counters"]
        p["port_rcv_packets"] -= 30_000_000  # fewer packets, still moving


def dataloader_warmup(i, s):
    """Model load and data-loader workers filling their queues: GPUs idle, then ramping up, for 60 s."""
    if i < 6:
        set_util(s, [0, 0, 3, 9, 14, 21][i], power=[75, 75, 90, 150, 190, 230][i])
        quiet_rdma(s, 0)
        for g in s["gpus"]:
            g["memory_used_bytes"] = (4 + 10 * i) * GIB


def nccl_init(i, s):
    """Communicator init: RAS answers INIT, ranks connect; GPUs idle for 30 s; then training."""
    if i < 3:
        set_util(s, 0, power=80)
        quiet_rdma(s, 0)
    if i % 2 == 0:
        comm = {"hash": "5d1e0a9c2b7f4e31", "size": 16, "ranks_answered": 16,
                "status": "INIT" if i < 3 else "RUNNING", "missing": [], "errors": [], "mismatches": [],
                "max_counts": {}}
        s["nccl"] = {"ras": [{"time": s["time"], "outcome": "ok", "detail": "", "format": "text",
                              "nccl_version": "2.30.7", "partial": False, "collection_seconds": 0.004,
                              "timeouts": 0, "communicators_count": 1, "dead_processes": [],
                              "missing_processes": [], "communicators": [comm]}]}


def second_step(i, s):
    """Step 1 of a multi-step job on the same node: counters carry step 0's totals and do not move."""
    s["context"]["step_id"] = "1"
    p = port(s)
    add(p["counters"], "link_downed", 2)
    add(p["hw_counters"], "out_of_sequence", 3_400_000)
    add(p["hw_counters"], "local_ack_timeout_err", 118)
    s["host_stats"]["oom_kills"] = 9
    for g in s["gpus"]:
        g["energy_mj"] += 9_800_000_000
        g["ecc_corrected"] = 412


def sw_power_cap(i, s):
    """Power-hungry kernels at the board limit: SW power cap set, clocks at max, no HW slowdown."""
    for g in s["gpus"]:
        g["power_w"] = 695 + rng_int(i, g["index"], 5)
        g["throttle_reasons"] = ["sw_power_cap"]
        g["throttle_reasons_mask"] = 0x4
        g["sm_clock_mhz"] = 1980


def rng_int(i, j, n):
    return (i * 7 + j * 3) % (n + 1)


def extra_rails(s, n):
    """n compute rails mlx5_0..mlx5_{n-1} (RoCE, each behind its own netdev), all busy."""
    first = port(s)
    for r in range(1, n):
        p = copy.deepcopy(first)
        p["device"], p["netdev"] = f"mlx5_{r}", f"ens{r + 1}f0"
        for key in ("port_rcv_packets", "port_xmit_packets", "port_rcv_data", "port_xmit_data"):
            p["counters"][key] += r * 1_000
        s["rdma"].append(p)


def unused_ib_port(i, s):
    """A ConnectX port in InfiniBand mode, never cabled, next to the RoCE rail the job uses."""
    s["rdma"].append({"device": "mlx5_4", "port": 1, "state": "DOWN", "phys_state": "Disabled",
                      "rate_gbps": 10, "link_layer": "InfiniBand", "netdev": "",
                      "counters": {"port_rcv_packets": 0, "port_xmit_packets": 0, "port_rcv_data": 0,
                                   "port_xmit_data": 0, "link_downed": 0},
                      "hw_counters": {}})


def cnp_bursts(i, s):
    """DCQCN reacting to the incast of each checkpoint: 20 s of CNPs every 5 min, otherwise quiet."""
    bursts_done = 0
    for start in range(6, i + 1, 30):
        bursts_done += min(2, i - start + 1)
    add(port(s)["hw_counters"], "rp_cnp_handled", bursts_done * 12_000)


def four_rails(i, s):
    extra_rails(s, 4)


def memory_94pct(i, s):
    """PyTorch's caching allocator holds 94 % of HBM: normal, not an OOM risk."""
    for g in s["gpus"]:
        g["memory_used_bytes"] = int(75.2 * GIB)


def teardown_tail(i, s):
    """The last 30 s: final checkpoint and process exit, GPUs idle."""
    if i >= 37:
        set_util(s, 0, power=72)


def ras_missing_once(i, s):
    """One RAS poll where rank 5 did not answer in time (busy in a long kernel); the next poll is clean."""
    if i % 2 == 0:
        missing = [{"peer": {"rank": 5, "host": "10.0.0.6", "pid": 77123, "gpus": "5"},
                    "considered_dead": False, "unresponsive": True}] if i == 4 else []
        comm = {"hash": "27a079b828ff1a75", "size": 16, "ranks_answered": 16 - len(missing),
                "status": "RUNNING", "missing": missing, "errors": [], "mismatches": [], "max_counts": {}}
        s["nccl"] = {"ras": [{"time": s["time"], "outcome": "ok", "detail": "", "format": "text",
                              "nccl_version": "2.30.7", "partial": bool(missing), "collection_seconds": 5.0,
                              "timeouts": len(missing), "communicators_count": 1, "dead_processes": [],
                              "missing_processes": [], "communicators": [comm]}]}


# ---- faults that issue 13 found answered wrongly ----------------------------------------------------------

def rail_down_before_step(i, s):
    """4 rails; mlx5_2 went down before the step (Disabled from the first sample); siblings carry traffic."""
    extra_rails(s, 4)
    dead = s["rdma"][2]
    dead["state"], dead["phys_state"] = "DOWN", "Disabled"
    for key in ("port_rcv_packets", "port_xmit_packets", "port_rcv_data", "port_xmit_data"):
        dead["counters"][key] = 1_234_567
    dead["counters"]["link_downed"] = 4


def short_port_down(i, s):
    """A 25 s step: the port goes DOWN and ACK timeouts pour in (1000/s)."""
    if i >= 2:
        p = port(s)
        p["state"], p["phys_state"] = "DOWN", "Polling"
        add(p["hw_counters"], "local_ack_timeout_err", 5_000 * (i - 1))


def nvml_not_loadable(i, s):
    s["context"]["gpus"] = ["0", "1"]
    s["gpus"] = []
    s["warnings"] = ["nvml: libnvidia-ml.so.1 not loadable (libnvidia-ml.so.1: cannot open shared object "
                     "file: No such file or directory) and nvidia-smi not found"]


def nvml_not_supported(i, s):
    """A driver that answers NOT_SUPPORTED for utilization: GPUs listed, never measured."""
    for g in s["gpus"]:
        g["utilization_pct"] = None
    if i == 0:
        s["warnings"] = [f"nvml: GPU {g}: nvmlDeviceGetUtilizationRates: Not Supported" for g in range(8)]


def sustained_low(i, s):
    """Busy, then 3 min starved (input pipeline stuck on a slow filesystem), then busy again."""
    if 8 <= i < 26:
        set_util(s, 9, power=160)


def frequent_dips(i, s):
    """The data loader cannot keep up: 15 s at ~5 % in every 40 s window."""
    if i % 8 < 3:
        set_util(s, 5, power=150)


def xid_94(i, s):
    if i == 5:
        s["xid_events"] = [{"code": 94, "pci_bus_id": "00000000:19:00.0", "gpu_index": 1, "severity": "critical",
                            "message": "pid=3490012, name=python, Ch 00000008, errorString CTX SWITCH TIMEOUT, "
                                       "Contained: CE User Channel (0x9). RST: No, D-RST: No"}]


def hw_thermal_one_gpu(i, s):
    """GPU 2's HW thermal slowdown bit set through a 50 s step; the second sample came 0.12 s after the
    first (the recorder's start-up sample), which once made the verdict say "of the last 0.12 s"."""
    if i == 1:
        s["time"] = T0 + 0.12
    g = s["gpus"][2]
    g["throttle_reasons"] = ["hw_thermal_slowdown"]
    g["throttle_reasons_mask"] = 0x40
    g["sm_clock_mhz"] = 1410
    g["temperature_c"] = 91


def ras_missing_persistent(i, s):
    """Rank 5 stops answering RAS from t=120 s on, poll after poll. Its NCCL debug file (shared
    filesystem) names its host, so the verdict can say gpu-node-06 instead of 10.0.0.6."""
    if i == 1:
        s["nccl"] = {"log_events": [{
            "kind": "nccl_warn", "file": "/scratch/4242/nccl.gpu-node-06.77123.log", "host": "gpu-node-06",
            "rank": 5, "pid": 77123, "fields": {},
            "line": "gpu-node-06:77123:77190 [5] NCCL WARN [Service thread] Accept failed Resource "
                    "temporarily unavailable"}]}
    if i % 2 == 0:
        missing = [{"peer": {"rank": 5, "host": "10.0.0.6", "pid": 77123, "gpus": "5"},
                    "considered_dead": False, "unresponsive": True}] if i >= 4 else []
        comm = {"hash": "27a079b828ff1a75", "size": 16, "ranks_answered": 16 - len(missing),
                "status": "RUNNING", "missing": missing, "errors": [], "mismatches": [], "max_counts": {}}
        s["nccl"] = {"ras": [{"time": s["time"], "outcome": "ok", "detail": "", "format": "text",
                              "nccl_version": "2.30.7", "partial": bool(missing), "collection_seconds": 5.0,
                              "timeouts": len(missing), "communicators_count": 1, "dead_processes": [],
                              "missing_processes": [], "communicators": [comm]}]}


def retry_exceeded(i, s):
    if i >= 5:
        add(port(s)["hw_counters"], "local_ack_timeout_err", 0)
        port(s)["hw_counters"]["req_transport_retries_exceeded"] = 2
    else:
        port(s)["hw_counters"]["req_transport_retries_exceeded"] = 0


def port_degraded(i, s):
    """The link retrained at half width (400 -> 200 Gb/s) at t=30 s."""
    if i >= 3:
        port(s)["rate_gbps"] = 200


def io_pressure(i, s):
    """A parallel filesystem stall: PSI io full ~35 % for 3 min while the GPUs wait."""
    if 6 <= i < 24:
        s["host_stats"]["psi"]["io_some_avg10"] = 70.0
        s["host_stats"]["psi"]["io_full_avg10"] = 35.0
        s["host_stats"]["procs_blocked"] = 3
        set_util(s, 30)


def row_remap_failure(i, s):
    if i >= 3:
        s["gpus"][7]["remapped_rows_failure"] = 1


def rnr_naks(i, s):
    if i >= 4:
        port(s)["hw_counters"]["rnr_nak_retry_err"] = 40 * (i - 3)


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
    "healthy_checkpoint_dips": dict(n=156, interval=10, seed=11, edit=checkpoint_dips),
    "healthy_eval_pauses": dict(n=100, interval=10, seed=12, edit=eval_pauses),
    "healthy_dataloader_warmup": dict(n=40, interval=10, seed=13, edit=dataloader_warmup),
    "healthy_nccl_init": dict(n=30, interval=10, seed=14, edit=nccl_init),
    "healthy_second_step": dict(n=20, interval=10, seed=15, edit=second_step),
    "healthy_sw_power_cap": dict(n=12, interval=10, seed=16, edit=sw_power_cap),
    "healthy_unused_ib_port": dict(n=12, interval=10, seed=17, edit=unused_ib_port),
    "healthy_cnp_bursts": dict(n=100, interval=10, seed=18, edit=cnp_bursts),
    "healthy_four_rails": dict(n=12, interval=10, seed=19, edit=four_rails),
    "healthy_gpu_memory_94pct": dict(n=12, interval=10, seed=20, edit=memory_94pct),
    "healthy_teardown_tail": dict(n=40, interval=10, seed=21, edit=teardown_tail),
    "healthy_ras_missing_once": dict(n=12, interval=30, seed=22, edit=ras_missing_once),
    # faults issue 13 found answered wrongly
    "rail_down_before_step": dict(n=12, interval=10, edit=rail_down_before_step),
    "short_step_port_down": dict(n=6, interval=5, edit=short_port_down),
    "short_step_quiet": dict(n=5, interval=5),
    "nvml_not_loadable": dict(n=12, interval=10, edit=nvml_not_loadable),
    "nvml_util_not_supported": dict(n=12, interval=10, edit=nvml_not_supported),
    "sustained_low_util": dict(n=40, interval=10, edit=sustained_low),
    "frequent_loader_dips": dict(n=60, interval=5, edit=frequent_dips),
    "xid_94_contained": dict(n=9, edit=xid_94),
    "hw_thermal_one_gpu": dict(n=6, interval=10, edit=hw_thermal_one_gpu),
    "ras_rank_missing_persistent": dict(n=10, interval=30, edit=ras_missing_persistent),
    "retry_exceeded": dict(n=9, edit=retry_exceeded),
    "port_degraded": dict(n=9, edit=port_degraded),
    "io_pressure_sustained": dict(n=30, interval=10, edit=io_pressure),
    "row_remap_failure": dict(n=9, edit=row_remap_failure),
    "rnr_naks": dict(n=9, edit=rnr_naks),
}


def main():
    for name, spec in SCENARIOS.items():
        lines = timeline(**spec)
        with open(os.path.join(HERE, name + ".jsonl"), "w") as f:
            for line in lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
