#!/usr/bin/env python3
"""Writes fixtures/nodes/{dgx-h100,roce,vm,garbage}/ and fixtures/nodes/amd-mi300/proc/.

Every file follows the kernel's own format (seq_printf widths of /proc/net/dev and /proc/meminfo, sysfs
attribute text of drivers/infiniband/core/sysfs.c, `ethtool -S` output). Values are deterministic so
tests can assert exact numbers; tests/sources/node/*_test.cc name the values they rely on.
Run from the repository root: python3 tests/sources/node/make_node_fixtures.py
(dgx-h100/nvml.json belongs to the NVML fixture and is left alone.)
"""
import os
import shutil

ROOT = os.path.join("fixtures", "nodes")


def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


def symlink(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


def clean(node, keep=()):
    base = os.path.join(ROOT, node)
    if not os.path.isdir(base):
        return
    for entry in os.listdir(base):
        if entry in keep:
            continue
        p = os.path.join(base, entry)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.remove(p)


# ---------------------------------------------------------------- /proc

NET_DEV_HEADER = (
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
)


def net_dev_row(name, c):
    # net/core/net-procfs.c dev_seq_printf_stats
    return ("%6s:%8d %7d %4d %4d %4d %5d %10d %9d %8d %7d %4d %4d %4d %5d %7d %10d\n"
            % ((name,) + tuple(c)))


def net_dev(rows):
    return NET_DEV_HEADER + "".join(net_dev_row(n, c) for n, c in rows)


def meminfo(total_kb, available_kb, free_kb, with_available=True):
    lines = [("MemTotal", total_kb), ("MemFree", free_kb)]
    if with_available:
        lines.append(("MemAvailable", available_kb))
    lines += [("Buffers", 123456), ("Cached", total_kb // 20), ("SwapCached", 0),
              ("Active", total_kb // 30), ("Inactive", total_kb // 40), ("SwapTotal", 0), ("SwapFree", 0),
              ("Dirty", 1234), ("Writeback", 0), ("AnonPages", total_kb // 50), ("Mapped", 654321),
              ("Shmem", 98765), ("Slab", 4567890), ("PageTables", 234567), ("Committed_AS", total_kb // 10),
              ("VmallocTotal", 34359738367), ("HugePages_Total", None), ("Hugepagesize", 2048)]
    out = []
    for k, v in lines:
        if v is None:
            out.append("HugePages_Total:       0\n")  # no unit, as the kernel prints it
        else:
            out.append("%-16s%8d kB\n" % (k + ":", v))
    return "".join(out)


def proc_stat(ncpu, running, blocked):
    out = ["cpu  %d 1234 %d %d 5678 0 4321 0 0 0\n" % (ncpu * 912345, ncpu * 23456, ncpu * 8765432)]
    for i in range(ncpu):
        out.append("cpu%d %d 12 %d %d 56 0 43 0 0 0\n" % (i, 912345 + i, 23456 + i, 8765432 - i))
    out.append("intr 98765432109 0 9 0 0 0 0 0 0 0 0 0 0 156 0 0 0\n")
    out.append("ctxt 123456789012\nbtime 1790000000\nprocesses 912345\n")
    out.append("procs_running %d\nprocs_blocked %d\n" % (running, blocked))
    out.append("softirq 1234567890 0 123456 0 0 0 0 0 0 0 0\n")
    return "".join(out)


def vmstat(oom_kill):
    keys = ["nr_free_pages 512000000", "nr_zone_inactive_anon 12345", "nr_zone_active_anon 2345678",
            "nr_dirty 300", "nr_writeback 0", "nr_mapped 163580", "nr_shmem 24691",
            "pgpgin 987654321", "pgpgout 123456789", "pswpin 0", "pswpout 0",
            "pgfault 98765432101", "pgmajfault 12345", "pgsteal_kswapd 0", "pgscan_kswapd 0",
            "compact_stall 3", "thp_fault_alloc 45678", "oom_kill %d" % oom_kill,
            "numa_hit 1234567890", "numa_miss 0", "workingset_refault_anon 0"]
    return "\n".join(keys) + "\n"


def pressure(some, full):
    def line(kind, v):
        return "%s avg10=%.2f avg60=%.2f avg300=%.2f total=%d\n" % ((kind,) + v)
    return line("some", some) + line("full", full)


def write_proc(base, loadavg, mem, stat, oom, psi, rows):
    write(f"{base}/proc/loadavg", loadavg)
    write(f"{base}/proc/meminfo", meminfo(*mem))
    write(f"{base}/proc/stat", proc_stat(*stat))
    write(f"{base}/proc/vmstat", vmstat(oom))
    for res, (some, full) in psi.items():
        write(f"{base}/proc/pressure/{res}", pressure(some, full))
    write(f"{base}/proc/net/dev", net_dev(rows))


def counters16(seed):
    s = seed
    return [s * 1000 + 17, s * 10 + 3, 0, s % 7, 0, 0, 0, s % 97,
            s * 900 + 11, s * 9 + 1, 0, 0, 0, 0, 0, 0]


# ---------------------------------------------------------------- sysfs infiniband

PMA_COUNTERS = [
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
    "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors",
    "port_xmit_data", "port_xmit_discards", "port_xmit_packets", "port_xmit_wait", "symbol_error",
    "unicast_rcv_packets", "unicast_xmit_packets",
]

# drivers/infiniband/hw/mlx5/counters.c: basic, out_of_seq, retrans, extended_err, roce_accl + lifespan.
HW_COUNTERS_IB = [
    "duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err", "out_of_buffer",
    "out_of_sequence", "packet_seq_err", "req_cqe_error", "req_cqe_flush_error", "req_remote_access_errors",
    "req_remote_invalid_request", "resp_cqe_error", "resp_cqe_flush_error", "resp_local_length_error",
    "resp_remote_access_errors", "rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to",
    "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans", "rx_atomic_requests",
    "rx_dct_connect", "rx_read_requests", "rx_write_requests",
]
# Ethernet (RoCE) ports add congestion control and ICRC counters.
HW_COUNTERS_ROCE = sorted(HW_COUNTERS_IB + [
    "np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored",
    "rx_icrc_encapsulated", "req_tx_retry_excd",
])


def pma_value(dev, name):
    """Deterministic counter values: data counters large, errors mostly zero, a few non-zero."""
    base = {
        "port_rcv_data": 123456789012, "port_xmit_data": 98765432109,
        "port_rcv_packets": 4567890123, "port_xmit_packets": 3456789012,
        "unicast_rcv_packets": 4567000000, "unicast_xmit_packets": 3456000000,
        "multicast_rcv_packets": 890123, "multicast_xmit_packets": 789012,
        "port_xmit_wait": 2345678901, "symbol_error": 0, "link_downed": 1,
        "link_error_recovery": 0,
    }.get(name, 0)
    return base + dev * 1000003 if base else (dev if name == "port_rcv_errors" else 0)


def hw_value(dev, name):
    if name == "lifespan":
        return 12
    base = {"rx_write_requests": 345678901, "rx_read_requests": 23456789, "rx_atomic_requests": 1234,
            "out_of_sequence": 17, "packet_seq_err": 3, "duplicate_request": 5, "local_ack_timeout_err": 2,
            "np_cnp_sent": 456789, "np_ecn_marked_roce_packets": 567890, "rp_cnp_handled": 345678,
            "rp_cnp_ignored": 0, "roce_adp_retrans": 11, "out_of_buffer": 0}.get(name, 0)
    return base + dev * 101 if base else 0


def write_ib_device(base, dev_index, name, pci, port_attrs, pma, hw, netdevs, gid_ndev=None,
                    pma_values=pma_value, hw_values=hw_value):
    """sys/devices/pci0000:00/<pci>/infiniband/<name>, linked from sys/class/infiniband/<name>."""
    pci_dir = f"{base}/sys/devices/pci0000:00/{pci}"
    dev_dir = f"{pci_dir}/infiniband/{name}"
    symlink(f"../../devices/pci0000:00/{pci}/infiniband/{name}", f"{base}/sys/class/infiniband/{name}")
    symlink(f"../../../{pci}", f"{dev_dir}/device")
    write(f"{dev_dir}/fw_ver", "28.39.1002\n")
    write(f"{dev_dir}/hca_type", "MT4129\n")
    write(f"{dev_dir}/board_id", "MT_0000000838\n")
    write(f"{dev_dir}/node_type", "1: CA\n")
    write(f"{dev_dir}/node_guid", "a088:c203:00%02x:%04x\n" % (dev_index, 0x1e00 + dev_index))
    for netdev, dev_port in netdevs:
        write(f"{pci_dir}/net/{netdev}/dev_port", "%d\n" % dev_port)
    for port, attrs in port_attrs.items():
        pdir = f"{dev_dir}/ports/{port}"
        for k, v in attrs.items():
            write(f"{pdir}/{k}", v + "\n")
        for c in pma:
            write(f"{pdir}/counters/{c}", "%d\n" % pma_values(dev_index, c))
        for c in hw:
            write(f"{pdir}/hw_counters/{c}", "%d\n" % hw_values(dev_index, c))
        if gid_ndev:
            write(f"{pdir}/gid_attrs/ndevs/0", gid_ndev + "\n")
            write(f"{pdir}/gid_attrs/types/0", "IB/RoCE v1\n")


def ib_port_attrs(state, phys, rate, layer, lid):
    return {"state": state, "phys_state": phys, "rate": rate, "link_layer": layer, "lid": "0x%x" % lid,
            "sm_lid": "0x1", "lid_mask_count": "0", "sm_sl": "0", "cap_mask": "0xa751e848"}


# ---------------------------------------------------------------- nodes

def dgx_h100():
    node = "dgx-h100"
    clean(node, keep=("nvml.json",))
    base = os.path.join(ROOT, node)
    rows = [("lo", [987654321, 1234567, 0, 0, 0, 0, 0, 0, 987654321, 1234567, 0, 0, 0, 0, 0, 0]),
            ("eno1", [56789012345, 45678901, 0, 12, 0, 0, 0, 34567, 23456789012, 34567890, 0, 0, 0, 0, 0, 0])]
    for i in range(8):
        rows.append(("ib%d" % i, counters16(100 + i)))
    write_proc(base, "12.41 11.87 10.02 34/3187 912345\n",
               (2113389156, 1923456780, 1800000000), (224, 34, 2), 3,
               {"cpu": ((1.52, 1.20, 0.98, 123456789), (0.0, 0.0, 0.0, 0)),
                "io": ((0.31, 0.25, 0.20, 2345678), (0.12, 0.10, 0.08, 1234567)),
                "memory": ((0.0, 0.0, 0.0, 4567), (0.0, 0.0, 0.0, 1234))}, rows)
    pcis = ["0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
            "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"]
    for i, pci in enumerate(pcis):
        attrs = {1: ib_port_attrs("4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand", 0x10 + i)}
        write_ib_device(base, i, "mlx5_%d" % i, pci, attrs, PMA_COUNTERS, HW_COUNTERS_IB, [("ib%d" % i, 0)])


def roce():
    node = "roce"
    clean(node)
    base = os.path.join(ROOT, node)
    rows = [("lo", [12345678, 23456, 0, 0, 0, 0, 0, 0, 12345678, 23456, 0, 0, 0, 0, 0, 0]),
            ("eno1np0", counters16(7)),
            ("ens1f0np0", [9876543210987, 7654321098, 0, 0, 0, 0, 0, 1234, 8765432109876, 6543210987, 0, 0, 0, 0, 0, 0]),
            ("ens1f1np1", counters16(11)),
            ("ens2f0np0", counters16(13))]
    write_proc(base, "3.10 2.95 2.80 5/1203 44444\n", (527988420, 400000000, 380000000), (64, 5, 0), 0,
               {"cpu": ((0.5, 0.4, 0.3, 555555), (0.0, 0.0, 0.0, 0)),
                "io": ((0.0, 0.0, 0.0, 1111), (0.0, 0.0, 0.0, 999)),
                "memory": ((0.0, 0.0, 0.0, 0), (0.0, 0.0, 0.0, 0))}, rows)
    roce_pma = [c for c in PMA_COUNTERS if c != "VL15_dropped"]
    eth = lambda s, p, r: {"state": s, "phys_state": p, "rate": r, "link_layer": "Ethernet",
                           "lid": "0x0", "sm_lid": "0x0", "lid_mask_count": "0", "sm_sl": "0",
                           "cap_mask": "0x04010000"}
    # mlx5_0: netdev named by gid_attrs/ndevs/0 (and device/net); mlx5_1: only device/net; mlx5_2 down.
    write_ib_device(base, 0, "mlx5_0", "0000:3b:00.0",
                    {1: eth("4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)")}, roce_pma, HW_COUNTERS_ROCE,
                    [("ens1f0np0", 0)], gid_ndev="ens1f0np0")
    write_ib_device(base, 1, "mlx5_1", "0000:3b:00.1",
                    {1: eth("4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)")}, roce_pma, HW_COUNTERS_ROCE,
                    [("ens1f1np1", 0)])
    write_ib_device(base, 2, "mlx5_2", "0000:af:00.0",
                    {1: eth("1: DOWN", "3: Disabled", "25 Gb/sec (1X EDR)")}, roce_pma, HW_COUNTERS_ROCE,
                    [("ens2f0np0", 0)])
    for ifname, storm, seed in (("ens1f0np0", 2, 0), ("ens1f1np1", 0, 1), ("ens2f0np0", 0, 2)):
        write(f"{base}/ethtool/{ifname}", ethtool_mlx5(seed, storm))


def ethtool_mlx5(seed, storm):
    """`ethtool -S` of an mlx5 netdev with PFC on priority 3: a realistic slice (~90 of ~670 fields)."""
    s = seed * 1000
    stats = [("rx_packets", 7654321098 + s), ("rx_bytes", 9876543210987 + s), ("tx_packets", 6543210987 + s),
             ("tx_bytes", 8765432109876 + s), ("tx_tso_packets", 1234), ("rx_csum_unnecessary", 7654321000),
             ("rx_xdp_drop", 0), ("tx_queue_stopped", 3), ("tx_queue_wake", 3), ("rx_wqe_err", 0),
             ("rx_out_of_buffer", 42 + seed), ("rx_if_down_packets", 0), ("rx_steer_missed_packets", 0),
             ("rx_vport_unicast_packets", 7654320000), ("rx_vport_rdma_unicast_packets", 7000000000 + s),
             ("tx_vport_rdma_unicast_packets", 6000000000 + s), ("rx_vport_rdma_unicast_bytes", 9000000000000),
             ("rx_packets_phy", 7654321098), ("rx_bytes_phy", 9876543210999), ("tx_packets_phy", 6543210987),
             ("tx_bytes_phy", 8765432109999), ("rx_crc_errors_phy", 0), ("rx_in_range_len_errors_phy", 0),
             ("rx_symbol_err_phy", 0), ("tx_discards_phy", 0), ("rx_discards_phy", 1500 + seed),
             ("tx_errors_phy", 0), ("rx_undersize_pkts_phy", 0), ("rx_fragments_phy", 0),
             ("rx_64_bytes_phy", 123), ("rx_4096_to_8191_bytes_phy", 7000000000),
             ("rx_buffer_passed_thres_phy", 77 + seed), ("rx_pcs_symbol_err_phy", 0),
             ("rx_corrected_bits_phy", 123456), ("rx_err_lane_0_phy", 0), ("rx_bits_phy", 98765432109876543),
             ("link_down_events_phy", 1), ("rx_pause_ctrl_phy", 0), ("tx_pause_ctrl_phy", 0),
             ("rx_unsupported_op_phy", 0), ("outbound_pci_buffer_overflow", 0),
             ("outbound_pci_stalled_rd", 0), ("outbound_pci_stalled_wr", 0),
             ("outbound_pci_stalled_rd_events", 0), ("outbound_pci_stalled_wr_events", 0),
             ("dev_out_of_buffer", 0)]
    for p in range(8):
        stats += [("rx_prio%d_bytes" % p, 0 if p != 3 else 9000000000000 + s),
                  ("rx_prio%d_packets" % p, 0 if p != 3 else 7000000000 + s),
                  ("rx_prio%d_discards" % p, 0 if p != 3 else 9 + seed),
                  ("tx_prio%d_bytes" % p, 0 if p != 3 else 8000000000000 + s),
                  ("tx_prio%d_packets" % p, 0 if p != 3 else 6000000000 + s)]
    stats += [("rx_prio3_pause", 123456 + seed), ("rx_prio3_pause_duration", 9876543 + seed),
              ("rx_prio3_pause_transition", 61728 + seed), ("tx_prio3_pause", 345 + seed),
              ("tx_prio3_pause_duration", 6789 + seed), ("rx_prio3_buf_discard", 0),
              ("rx_prio3_cong_discard", 4 + seed), ("rx_prio3_marked", 5678 + seed),
              ("tx_pause_storm_warning_events", 7 * storm), ("tx_pause_storm_error_events", storm // 2),
              ("module_unplug", 0), ("module_bus_stuck", 0), ("module_high_temp", 0), ("module_bad_shorted", 0)]
    for ch in range(2):
        stats += [("ch%d_events" % ch, 123456), ("ch%d_poll" % ch, 234567), ("ch%d_arm" % ch, 123400),
                  ("rx%d_packets" % ch, 1000), ("rx%d_bytes" % ch, 100000), ("tx%d_packets" % ch, 900),
                  ("tx%d_bytes" % ch, 90000), ("tx%d_dropped" % ch, 0)]
    return "NIC statistics:\n" + "".join("     %s: %d\n" % kv for kv in stats)


def vm():
    node = "vm"
    clean(node)
    base = os.path.join(ROOT, node)
    rows = [("lo", [45678, 456, 0, 0, 0, 0, 0, 0, 45678, 456, 0, 0, 0, 0, 0, 0]),
            ("eth0", [1234567890, 987654, 0, 5, 0, 0, 0, 0, 234567890, 765432, 0, 0, 0, 0, 0, 0])]
    write_proc(base, "0.08 0.03 0.01 1/187 4321\n", (16365196, 15000000, 14000000), (4, 1, 0), 0,
               {"cpu": ((0.0, 0.0, 0.0, 12345), (0.0, 0.0, 0.0, 0)),
                "io": ((0.05, 0.02, 0.01, 67890), (0.03, 0.01, 0.00, 45678)),
                "memory": ((0.0, 0.0, 0.0, 0), (0.0, 0.0, 0.0, 0))}, rows)
    write(f"{base}/sys/class/net/eth0/operstate", "up\n")
    # virtio_net: statistics exist, none of them is a pause/backpressure field.
    write(f"{base}/ethtool/eth0", "NIC statistics:\n     rx_queue_0_packets: 987654\n"
          "     rx_queue_0_bytes: 1234567890\n     rx_queue_0_drops: 0\n     rx_queue_0_xdp_packets: 0\n"
          "     tx_queue_0_packets: 765432\n     tx_queue_0_bytes: 234567890\n     tx_queue_0_kicks: 765000\n")


def garbage():
    node = "garbage"
    clean(node)
    b = os.path.join(ROOT, node)
    write(f"{b}/proc/loadavg", "0.52 abc 1.5e999 1/100 200\n")
    # MemTotal above 2^64-1; no MemAvailable line (kernels < 3.14 and some containers).
    write(f"{b}/proc/meminfo", "MemTotal:       18446744073709551616 kB\nMemFree:         1234567 kB\n"
                               "Buffers:           12345 kB\n")
    write(f"{b}/proc/stat", "cpu  1 2 3 4 5 6 7 0 0 0\nprocs_running -3\nprocs_blocked 0\n")
    write(f"{b}/proc/vmstat", b"nr_free_pages 1000\noom_kill \x01\x02\xff\n", mode="wb")
    write(f"{b}/proc/pressure/cpu", "")  # empty
    write(f"{b}/proc/pressure/io", "some avg10=x avg60=0.00 avg300=0.00 total=12\n"
                                   "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n")
    # pressure/memory is missing.
    write(f"{b}/proc/net/dev", NET_DEV_HEADER
          + net_dev_row("lo", [100, 1, 0, 0, 0, 0, 0, 0, 100, 1, 0, 0, 0, 0, 0, 0])
          + "  eth0: 1234 56 0 0 0 0 0 0\n"  # truncated after 8 columns
          + "  eth1: 1234 abc 0 0 0 0 0 0 99 1 0 0 0 0 0 0\n"
          + "  eth2:18446744073709551616 1 0 0 0 0 0 0 99 1 0 0 0 0 0 0\n")
    pdir = f"{b}/sys/class/infiniband/mlx5_0/ports/1"
    for k, v in {"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "rate": "fast\n",
                 "link_layer": "InfiniBand\n"}.items():
        write(f"{pdir}/{k}", v)
    bad = {"port_rcv_data": "", "port_xmit_data": "N/A (no PMA)\n", "symbol_error": "-1\n",
           "link_downed": "18446744073709551616\n", "VL15_dropped": "12abc\n", "port_xmit_packets": "12345\n"}
    for k, v in bad.items():
        write(f"{pdir}/counters/{k}", v)
    write(f"{pdir}/counters/port_rcv_errors", b"\x00\x01\x02\xfe", mode="wb")
    write(f"{pdir}/counters/port_xmit_wait/README", "a directory where a counter file should be\n")
    symlink("../../../../../../nowhere/port_rcv_packets", f"{pdir}/counters/port_rcv_packets")
    write(f"{pdir}/hw_counters/out_of_sequence", "7\n")
    write(f"{pdir}/hw_counters/lifespan", "12\n")
    write(f"{pdir}/hw_counters/np_cnp_sent", "0x1f\n")
    # A device whose ports directory is missing.
    write(f"{b}/sys/class/infiniband/mlx5_1/node_type", "1: CA\n")
    write(f"{b}/ethtool/eth0", "NIC statistics:\n     rx_pause_ctrl_phy: abc\n     tx_pause_ctrl_phy: 5\n"
                               "     garbage line without a colon\n     rx_discards_phy: -1\n"
                               "     rx_packets: 12\n")


def amd_mi300_proc():
    base = os.path.join(ROOT, "amd-mi300")
    if os.path.isdir(f"{base}/proc"):
        shutil.rmtree(f"{base}/proc")
    rows = [("lo", [45678, 456, 0, 0, 0, 0, 0, 0, 45678, 456, 0, 0, 0, 0, 0, 0]),
            ("eno1", counters16(21)), ("ens10f0np0", counters16(23))]
    write_proc(base, "48.20 47.95 46.10 97/2876 333333\n", (2376744212, 2100000000, 2000000000), (8, 97, 1), 0,
               {"cpu": ((2.10, 1.90, 1.70, 9876543), (0.0, 0.0, 0.0, 0)),
                "io": ((0.0, 0.0, 0.0, 2222), (0.0, 0.0, 0.0, 1111)),
                "memory": ((0.0, 0.0, 0.0, 333), (0.0, 0.0, 0.0, 111))}, rows)


if __name__ == "__main__":
    dgx_h100()
    roce()
    vm()
    garbage()
    amd_mi300_proc()
