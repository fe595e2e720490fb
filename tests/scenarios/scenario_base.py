"""Shared parts of the scenario generator: one healthy 8-GPU training node sample (base), a timeline of
them with per-scenario edits, and small helpers the edits use. See generate.py.
"""
import copy
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
