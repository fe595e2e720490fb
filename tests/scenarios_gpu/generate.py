#!/usr/bin/env python3
"""Writes the GPU-depth scenario timelines (issue 15): GPM, NVLink/PCIe errors, GPU processes, MIG and the
job's own cgroup. Bare snapshot lines (stallscope.snapshot/1), as `stallscope --json` prints them, replayed
by scenario_gpu_test.cc. Run: python3 tests/scenarios_gpu/generate.py"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1790000000


def gpu(i, util=97.0, power=640.0, sm=85.0, tensor=60.0, dram=40.0, nvlink=30000.0, pcie=900.0, **extra):
    g = {"index": i, "uuid": "GPU-%08d-0000-4000-8000-000000000000" % i,
         "pci_bus_id": "00000000:%02X:00.0" % (0x18 + i), "name": "NVIDIA H100 80GB HBM3", "vendor": "nvidia",
         "utilization_pct": util, "memory_used_bytes": 60 << 30, "memory_total_bytes": 80 << 30,
         "temperature_c": 55.0, "power_w": power, "power_limit_w": 700.0, "sm_clock_mhz": 1980,
         "max_sm_clock_mhz": 1980, "throttle_reasons": [], "ecc_uncorrected": 0, "energy_mj": 48000000000 + i,
         "xid": []}
    if sm is not None:
        g["gpm"] = {"sm_active_pct": sm, "sm_occupancy_pct": sm / 2, "tensor_active_pct": tensor,
                    "dram_bandwidth_pct": dram, "pcie_tx_mib_per_s": pcie, "pcie_rx_mib_per_s": pcie,
                    "nvlink_tx_mib_per_s": nvlink / 2, "nvlink_rx_mib_per_s": nvlink / 2}
    g.update(extra)
    return g


def cgroup(oom_kill=0, periods=1000, throttled=0, cpu_some=0.5, io_full=0.0, mem_full=0.0):
    return {"version": 2, "path": "/system.slice/slurmstepd.scope/job_4242", "scope": "job", "job_id": "4242",
            "step_id": "0", "memory_current_bytes": 400 << 30, "memory_peak_bytes": 450 << 30,
            "memory_max_bytes": 500 << 30, "memory_oom_events": oom_kill, "memory_oom_kill_events": oom_kill,
            "cpu_usage_usec": 0, "cpu_nr_periods": periods, "cpu_nr_throttled": throttled,
            "cpu_throttled_usec": throttled * 50000,
            "psi": {"cpu_some_avg10": cpu_some, "io_full_avg10": io_full, "memory_full_avg10": mem_full}}


def snapshot(t, gpus, job=None, oom_kills=3):
    s = {"schema": "stallscope.snapshot/1", "time": T0 + t, "host": "gpu-node-17",
         "context": {"scheduler": "slurm", "job_id": "4242", "step_id": "0"},
         "host_stats": {"load1": 12.0, "mem_total_bytes": 2 << 40, "mem_available_bytes": 1 << 40,
                        "procs_running": 20, "procs_blocked": 0, "oom_kills": oom_kills,
                        "psi": {"cpu_some_avg10": 0.5, "io_some_avg10": 0.1, "io_full_avg10": 0.0,
                                "memory_some_avg10": 0.0, "memory_full_avg10": 0.0}},
         "interfaces": [{"name": "eth0", "rx_packets": 1000 + t, "tx_packets": 1000 + t, "rx_errors": 0,
                         "tx_errors": 0, "rx_dropped": 0, "tx_dropped": 0}],
         "rdma": [], "gpus": gpus, "xid_events": [], "warnings": []}
    if job is not None:
        s["job_cgroup"] = job
    return s


def write(name, lines):
    with open(os.path.join(HERE, name + ".jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def steps(n, interval=10):
    return [i * interval for i in range(n)]


# Healthy compute-bound H100s: FAST, and the hint says compute from GPM (SM + tensor busy).
write("gpm_compute_bound", [snapshot(t, [gpu(i) for i in range(4)], cgroup()) for t in steps(8)])

# Memory-bandwidth-bound: SMs busy, DRAM bandwidth >= 70 %: FAST, hint memory.
write("gpm_memory_bound", [snapshot(t, [gpu(i, sm=75.0, tensor=10.0, dram=88.0) for i in range(4)], cgroup())
                           for t in steps(8)])

# Utilization 100 % and power 450 W (power alone says "working"), but GPM shows 1.5 % SM activity and no
# tensor/DRAM work: a busy-wait hang only GPM can see.
write("gpm_busy_wait_hang", [snapshot(t, [gpu(i, util=100.0, power=450.0, sm=1.5, tensor=0.0, dram=0.2, nvlink=0.0,
                                              pcie=1.0) for i in range(4)], cgroup()) for t in steps(8)])

# Utilization 92 % but SMs 12 % busy while the job's CPUs are under pressure: input-starved.
write("gpm_input_starved", [snapshot(t, [gpu(i, util=92.0, sm=12.0, tensor=3.0, dram=5.0, nvlink=100.0, pcie=50.0)
                                         for i in range(4)], cgroup(cpu_some=35.0)) for t in steps(8)])

# Two MIG slices of one H100: no utilization; one computing, one with 0 % SM activity for > 300 s: the
# idle slice is named (decided on GPM), and the missing utilization is not "idle".
def mig(i, sm):
    g = gpu(0, util=None, sm=sm, tensor=sm / 2, dram=sm / 3, nvlink=0.0, pcie=100.0)
    del g["utilization_pct"]
    g["uuid"] = "MIG-%08d-1111-5000-8000-000000000000" % i
    g["mig"] = {"parent_uuid": "GPU-00000000-0000-4000-8000-000000000000", "parent_pci_bus_id": "00000000:18:00.0",
                "parent_index": 0, "gpu_instance_id": i + 1, "compute_instance_id": 0, "gauges_from_parent": True}
    return g


write("mig_idle_slice", [snapshot(t, [mig(0, 80.0), mig(1, 0.0)], cgroup()) for t in steps(40)])

# The job's own OOM kill (memory.events oom_kill 0 -> 1) while the node's vmstat also counts it: one
# job_oom_kill reason, not the node-wide host_oom_kill.
write("job_oom_kill", [snapshot(t, [gpu(i) for i in range(2)], cgroup(oom_kill=0 if t < 40 else 1),
                                oom_kills=3 if t < 40 else 4) for t in steps(8)])

# Another job's OOM kill on a shared node: the node counts it, the job's cgroup does not: FAST.
write("other_job_oom_kill", [snapshot(t, [gpu(i) for i in range(2)], cgroup(oom_kill=0),
                                      oom_kills=3 if t < 40 else 4) for t in steps(8)])

# The job's CPU limit throttles it in 40 % of its scheduler periods.
write("job_cpu_throttled", [snapshot(t, [gpu(i) for i in range(2)], cgroup(periods=1000 + 100 * i, throttled=40 * i))
                            for i, t in enumerate(steps(8))])

# NVLink CRC errors growing on GPU 1: a fabric-like reason naming the GPU.
def with_links(i, t, crc=0, recovery=0):
    g = gpu(i)
    g["interconnect"] = {"nvlink_link_count": 18, "nvlink_tx_bytes": 10 ** 12 + t * 10 ** 9,
                         "nvlink_rx_bytes": 10 ** 12 + t * 10 ** 9, "nvlink_crc_errors": crc,
                         "nvlink_replay_errors": 0, "nvlink_recovery_errors": recovery, "pcie_replay_count": 0,
                         "pcie_tx_bytes": 10 ** 11, "pcie_rx_bytes": 10 ** 11}
    return g


write("nvlink_crc_errors", [snapshot(t, [with_links(0, t), with_links(1, t, crc=25 * n)], cgroup())
                            for n, t in enumerate(steps(8))])
write("nvlink_recovery", [snapshot(t, [with_links(0, t), with_links(1, t, recovery=0 if t < 40 else 1)], cgroup())
                          for t in steps(8)])

# A process of job 4243 holds 7 GiB on GPU 0 of this step.
def with_procs(i):
    g = gpu(i)
    g["processes"] = [{"pid": 31337 + i, "used_memory_bytes": 60 << 30, "cgroup":
                       "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_%d" % i, "job_id": "4242",
                       "uid": 1000, "owner": "step"}]
    if i == 0:
        g["processes"].append({"pid": 40001, "used_memory_bytes": 7 << 30, "cgroup":
                               "/system.slice/slurmstepd.scope/job_4243/step_0/user/task_0", "job_id": "4243",
                               "uid": 1001, "owner": "other_job"})
    return g


write("foreign_gpu_process", [snapshot(t, [with_procs(i) for i in range(2)], cgroup()) for t in steps(8)])

# The job's CPU limit (throttled in 40 % of periods) starves GPUs that read 92 % utilization at 12 % SM
# activity: the throttling is the root cause, the low SM activity its symptom.
write("throttled_starves_gpus",
      [snapshot(t, [gpu(i, util=92.0, sm=12.0, tensor=3.0, dram=5.0, nvlink=100.0, pcie=50.0) for i in range(4)],
                cgroup(periods=1000 + 100 * n, throttled=40 * n)) for n, t in enumerate(steps(8))])

# issue 38 ("found from the outside"):
# A healthy MIG job: both slices compute (GPM), NVML has no utilization for either. GPM SM activity counts
# as measured (rules/README.md), so the step can be FAST, not UNKNOWN gpu_telemetry_missing.
write("mig_healthy", [snapshot(t, [mig(0, 80.0), mig(1, 72.0)], cgroup()) for t in steps(40)])


# Another job's process appears on GPU 0 with 0.55 GiB and grows to 6.5 GiB, held for 11 minutes: the
# verdict reports its peak and how long it stayed, not what it held when first seen.
def foreign_growing(i, t):
    g = with_procs(i)
    g["processes"] = [p for p in g["processes"] if p["owner"] == "step"]
    if i == 0 and 60 <= t < 60 + 660:
        held = int(0.55 * (1 << 30)) if t < 120 else int(6.5 * (1 << 30))
        g["processes"].append({"pid": 40001, "used_memory_bytes": held, "cgroup":
                               "/system.slice/slurmstepd.scope/job_4243/step_0/user/task_0", "job_id": "4243",
                               "uid": 1001, "owner": "other_job"})
    return g


write("foreign_process_grows", [snapshot(t, [foreign_growing(i, t) for i in range(2)], cgroup())
                                for t in steps(80)])


# The job's OOM kill takes the rank on GPU 2 (its process vanishes, the GPU goes idle); the ranks on GPUs 0,
# 1 and 3 spin in their next collective (100 % utilization, no SM work). worst_gpu is GPU 2, whose rank
# died, not GPU 0, the first hung one.
def oom_rank(i, t, killed_at=60):
    g = with_procs(i)
    g["processes"] = [p for p in g["processes"] if p["owner"] == "step"]
    if t < killed_at:
        return g
    if i == 2:
        g.update(utilization_pct=0.0, power_w=90.0, processes=[])
        g["gpm"].update(sm_active_pct=0.0, sm_occupancy_pct=0.0, tensor_active_pct=0.0, dram_bandwidth_pct=0.0)
    else:
        g.update(utilization_pct=100.0, power_w=150.0)
        g["gpm"].update(sm_active_pct=1.5, sm_occupancy_pct=0.75, tensor_active_pct=0.0, dram_bandwidth_pct=0.2)
    return g


write("oom_kill_hangs_ranks", [snapshot(t, [oom_rank(i, t) for i in range(4)], cgroup(oom_kill=0 if t < 60 else 1))
                               for t in steps(20)])
