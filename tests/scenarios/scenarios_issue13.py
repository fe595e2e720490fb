"""Scenario edits for the wrong-answer classes of issue 13: healthy variants real jobs have (each must be
FAST with no warning/critical reason) and the faults that were answered wrongly. Used by generate.py.
"""

from scenario_base import GIB, T0, add, extra_rails, iface, port, quiet_rdma, rng_int, set_util


# ---- healthy variants real jobs have (issue 13): each must be FAST with no warning/critical reason -------

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
                            "message": "pid=3490012, name=python, Contained: CE User Channel (0x9). RST: No, D-RST: No"}]


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
