#!/usr/bin/env python3
"""Checks of contrib/validate-gpu-node.sh: reads stallscope's output and prints one row per check,
"ROW<TAB>PASS|FAIL|SKIP|INFO<TAB>name<TAB>detail". Standard library only (no PyTorch needed).

  snapshot SNAPSHOT.json CAPTURE.json [SMI.csv]    the passive checks of stallscope --json
  phases EXPORT.jsonl PHASES.json STALLSCOPE DIR   per load phase, from the timeline (export)
  ras EXPORT.jsonl PHASES.json                     what stallscope's RAS client read during the NCCL phase

SMI.csv: `nvidia-smi --query-gpu=uuid,pci.bus_id,name,compute_cap,mig.mode.current --format=csv,noheader`.
"""
import json
import re
import subprocess
import sys

UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
BUS_ID = re.compile(r"^[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
# Hopper and newer by name, for when nvidia-smi does not give the compute capability.
HOPPER_OR_NEWER = re.compile(r"\b(H\d{2,3}|GH\d{3}|B\d{3}|GB\d{3}|RTX PRO \d+ Blackwell)\b")


def row(status, name, detail):
    print("ROW\t%s\t%s\t%s" % (status, name, " ".join(str(detail).split())))


def last_json_line(path):
    """The last sample, with the warnings of every sample: a collector says a thing once per run."""
    with open(path) as f:
        samples = [json.loads(line) for line in f if line.strip().startswith("{")]
    last = samples[-1]
    last["warnings"] = [w for s in samples for w in s.get("warnings", [])]
    return last


def read_smi(path):
    gpus = {}
    if not path:
        return gpus
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.split(",")]
            if len(cells) >= 5 and cells[0].startswith("GPU-"):
                gpus[cells[0]] = {"pci_bus_id": cells[1], "name": cells[2], "compute_cap": cells[3],
                                  "mig": cells[4]}
    return gpus


def expects_gpm(gpu, smi):
    cap = smi.get(gpu.get("uuid") or (gpu.get("mig") or {}).get("parent_uuid"), {}).get("compute_cap", "")
    try:
        return float(cap) >= 9.0
    except ValueError:
        return bool(HOPPER_OR_NEWER.search(gpu.get("name") or ""))


def check_snapshot(snapshot_path, capture_path, smi_path=None):
    snap = last_json_line(snapshot_path)
    smi = read_smi(smi_path)
    gpus = [g for g in snap.get("gpus", []) if g.get("vendor") == "nvidia"]
    warnings = snap.get("warnings", [])
    via_smi = [w for w in warnings if "using" in w and "nvidia-smi" in w]
    if not gpus:
        row("FAIL", "nvml", "no NVIDIA GPU in stallscope --json: " + "; ".join(warnings[:3]))
        return
    row("FAIL" if via_smi else "PASS", "nvml",
        "%d GPU(s) read through %s" % (len(gpus), "nvidia-smi (NVML did not load)" if via_smi else "NVML"))
    # 1. identity
    bad = [g.get("index") for g in gpus if not UUID.match(g.get("uuid") or "") or
           not BUS_ID.match(g.get("pci_bus_id") or (g.get("mig") or {}).get("parent_pci_bus_id") or "")]
    detail = ", ".join("%s %s %s" % (g.get("index"), g.get("uuid"), g.get("pci_bus_id")) for g in gpus)
    if smi:
        parents = {g.get("uuid") if not g.get("mig") else g["mig"].get("parent_uuid") for g in gpus}
        missing = sorted(set(smi) - parents)
        if missing:
            bad.append("nvidia-smi lists " + ",".join(missing))
        for g in gpus:
            s = smi.get(g.get("uuid"))
            if s and s["pci_bus_id"].upper() != (g.get("pci_bus_id") or "").upper():
                bad.append("GPU %s bus id %s vs nvidia-smi %s" % (g.get("index"), g.get("pci_bus_id"), s["pci_bus_id"]))
    row("FAIL" if bad else "PASS", "identity", ("bad: %s; " % bad if bad else "") + detail)
    # gauges (MIG slices: no utilization from NVML, gauges from the parent)
    problems = []
    for g in gpus:
        is_mig = bool(g.get("mig"))
        need = ["memory_used_bytes", "memory_total_bytes", "temperature_c", "power_w", "power_limit_w"]
        if not is_mig:
            need.append("utilization_pct")
        missing = [k for k in need if g.get(k) is None]
        if missing:
            problems.append("GPU %s: %s null" % (g.get("index"), ",".join(missing)))
        if is_mig and g.get("utilization_pct") is not None:
            problems.append("MIG slice %s: utilization %s where NVML has none" % (g.get("index"), g["utilization_pct"]))
        if g.get("utilization_pct") is not None and not 0 <= g["utilization_pct"] <= 100:
            problems.append("GPU %s: utilization %s" % (g.get("index"), g["utilization_pct"]))
        if g.get("temperature_c") is not None and not 5 <= g["temperature_c"] <= 110:
            problems.append("GPU %s: %s °C" % (g.get("index"), g["temperature_c"]))
        if g.get("power_w") is not None and g.get("power_limit_w") and g["power_w"] > 1.3 * g["power_limit_w"]:
            problems.append("GPU %s: power %s W over limit %s W" % (g.get("index"), g["power_w"], g["power_limit_w"]))
    row("FAIL" if problems else "PASS", "gauges", "; ".join(problems) or
        "utilization, memory, temperature, power and limit on every GPU (MIG: utilization null as NVML says)")
    problems = []
    for g in gpus:
        clock, top = g.get("sm_clock_mhz"), g.get("max_sm_clock_mhz")
        if clock is None or top is None or clock > top * 1.05:
            problems.append("GPU %s: SM clock %s / max %s MHz" % (g.get("index"), clock, top))
        if not isinstance(g.get("throttle_reasons"), list):
            problems.append("GPU %s: throttle_reasons %r" % (g.get("index"), g.get("throttle_reasons")))
    row("FAIL" if problems else "PASS", "clocks", "; ".join(problems) or ", ".join(
        "GPU %s %s/%s MHz %s" % (g.get("index"), g.get("sm_clock_mhz"), g.get("max_sm_clock_mhz"),
                                 "+".join(g.get("throttle_reasons") or []) or "no throttle") for g in gpus))
    # GPM: Hopper and newer must have it; elsewhere absent with the warning
    gpm_warned = any("GPM unsupported" in w for w in warnings)
    problems, notes = [], []
    for g in gpus:
        has = bool(g.get("gpm")) and g["gpm"].get("sm_active_pct") is not None
        if expects_gpm(g, smi) and not has:
            problems.append("GPU %s (%s): no GPM on Hopper or newer" % (g.get("index"), g.get("name")))
        elif not expects_gpm(g, smi) and not has and not gpm_warned:
            problems.append("GPU %s: GPM absent without the warning" % g.get("index"))
        else:
            notes.append("GPU %s %s" % (g.get("index"), "SM %.1f %%" % g["gpm"]["sm_active_pct"] if has else "null+warning"))
    row("FAIL" if problems else "PASS", "gpm", "; ".join(problems) or ", ".join(notes))
    # NVLink / PCIe field values: present, or null with a warning naming the GPU
    problems, notes = [], []
    for g in gpus:
        link = g.get("interconnect")
        if link:
            notes.append("GPU %s nvlink links %s, pcie replays %s" % (g.get("index"), link.get("nvlink_link_count"),
                                                                    link.get("pcie_replay_count")))
        elif g.get("mig"):
            notes.append("slice %s: parent's" % g.get("index"))
        elif not any("GPU %s" % g.get("index") in w and ("interconnect" in w or "field values" in w) for w in warnings):
            problems.append("GPU %s: no interconnect and no warning" % g.get("index"))
        else:
            notes.append("GPU %s null+warning" % g.get("index"))
    row("FAIL" if problems else "PASS", "nvlink_pcie", "; ".join(problems) or ", ".join(notes))
    # MIG as it is
    slices = [g for g in gpus if g.get("mig")]
    smi_mig = sorted({s["mig"] for s in smi.values()})
    detail = ("MIG on: %d slice(s) %s" % (len(slices), ", ".join(
        "%s (GI %s of %s)" % (g.get("uuid"), g["mig"].get("gpu_instance_id"), g["mig"].get("parent_uuid"))
        for g in slices))) if slices else "MIG off (no slice reported)"
    mismatch = smi and (("Enabled" in smi_mig) != bool(slices))
    row("FAIL" if mismatch else "PASS", "mig", detail + ("; nvidia-smi says %s" % smi_mig if smi else ""))
    # the capture matches what stallscope read
    with open(capture_path) as f:
        capture = json.load(f)
    captured = {g.get("uuid") for g in capture.get("gpus", [])}
    parents = {g.get("uuid") if not g.get("mig") else g["mig"].get("parent_uuid") for g in gpus}
    row("PASS" if parents <= captured else "FAIL", "capture",
        "%d GPU(s) in the fixture, %d field(s) not supported, notes: %s" % (
            len(captured), sum(len(g.get("not_supported", [])) + len(g.get("errors", {})) for g in capture["gpus"]),
            "; ".join(capture.get("_capture", {}).get("notes", [])) or "none"))


def samples_between(samples, start, end):
    return [s for s in samples if start <= s.get("time_unix", 0) <= end]


def median(values):
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


def gpu_series(samples, key, gpm=False):
    out = []
    for s in samples:
        for g in s.get("gpus", []):
            if g.get("vendor") != "nvidia":
                continue
            out.append((g.get("gpm") or {}).get(key) if gpm else g.get(key))
            break  # the kit loads device 0: the first GPU of each sample
    return out


def replay_slice(stallscope, header, samples, path):
    with open(path, "w") as f:
        for line in ([header] if header else []) + samples:
            f.write(json.dumps(line) + "\n")
    out = subprocess.run([stallscope, "replay", "--json", path], capture_output=True, text=True, timeout=120)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            obj = json.loads(line)
            return obj.get("verdict", obj)
    return {}


def check_phases(export_path, phases_path, stallscope, work_dir):
    """Numbers per phase from the exported samples; what the rules say from `stallscope replay` of the
    phase's samples (a v2 timeline keeps no per-sample profile: replay recomputes it, as for any job)."""
    header, samples = None, []
    with open(export_path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            obj = json.loads(line)
            if obj.get("type") == "header":
                header = obj
            elif obj.get("type", "sample") == "sample" and "gpus" in obj:
                samples.append(obj)
    for s in samples:
        s["time_unix"] = s["time"] if isinstance(s.get("time"), (int, float)) else s.get("unix_time", 0)
    with open(phases_path) as f:
        phases = json.load(f)
    thresholds = (header or {}).get("thresholds", {})
    hang_samples = thresholds.get("hang_min_samples", 5)
    min_step = thresholds.get("min_step_seconds", 30)
    interval = (header or {}).get("interval_seconds", 1)
    sm_count = phases.get("sm_count") or 0

    def replay(name, start, end):
        verdict = replay_slice(stallscope, header, samples_between(samples, start, end),
                               "%s/phase-%s.jsonl" % (work_dir, name))
        return verdict.get("label"), [r.get("code") for r in verdict.get("reasons", [])]

    for p in phases["phases"]:
        name = p["name"]
        if name == "nccl":
            continue
        # Leave the first seconds of a phase out: the previous phase's last kernels and the GPM pair.
        part = samples_between(samples, p["start"] + 3 * interval, p["end"])
        if len(part) < 2:
            row("FAIL", "phase_" + name, "%d sample(s) in the phase: the helper did not sample" % len(part))
            continue
        util = median(gpu_series(part, "utilization_pct"))
        sm = median(gpu_series(part, "sm_active_pct", gpm=True))
        tensor = median(gpu_series(part, "tensor_active_pct", gpm=True))
        dram = median(gpu_series(part, "dram_bandwidth_pct", gpm=True))
        numbers = "util %s %%, SM %s %%, tensor %s %%, DRAM %s %%" % (util, sm, tensor, dram)
        problems = []
        if name.startswith("idle"):
            if util is not None and util > 5:
                problems.append("utilization %s %% while idle" % util)
            if sm is not None and sm > 2:
                problems.append("SM activity %s %% while idle" % sm)
            if name == "idle_end":
                _, codes = replay(name, p["start"], p["end"])
                if not {"gpu_idle", "gpu_low_utilization"} & set(codes):
                    problems.append("no gpu_idle/gpu_low_utilization reason (%s)" % codes[:3])
        elif name == "matmul":
            if util is None or util < 90:
                problems.append("utilization %s %% < 90" % util)
            if tensor is not None and tensor < 20:
                problems.append("tensor activity %s %% < 20" % tensor)
        elif name == "copy":
            if dram is not None and dram < 40:
                problems.append("DRAM bandwidth %s %% < 40" % dram)
            if tensor is not None and tensor > 10:
                problems.append("tensor activity %s %% during copies" % tensor)
        elif name == "spin":
            if p.get("skipped"):
                row("SKIP", "phase_spin", p["skipped"])
                continue
            if util is None or util < 90:
                problems.append("utilization %s %% < 90" % util)
            sm_max = max(5.0, 3 * 100.0 / sm_count) if sm_count else 5.0
            if sm is not None and sm > sm_max:
                problems.append("SM activity %s %% > %.1f %% (one block of %s SMs)" % (sm, sm_max, sm_count))
            # The rule's samples, plus the GPM pair and the first kernel: the hang must be named by then.
            window = (hang_samples + 3) * interval + 1
            _, codes = replay("spin-window", p["start"], p["start"] + window)
            if "gpu_busy_wait_hang" not in codes:
                problems.append("gpu_busy_wait_hang not named within %.0f s (%s)" % (window, codes[:3]))
            else:
                numbers += ", gpu_busy_wait_hang named within %.0f s" % window
        row("FAIL" if problems else "PASS", "phase_" + name, "; ".join(problems + [numbers]))
        # The phase as a step of its own: its verdict, where the phase is long enough to have one.
        if name in ("matmul", "spin") and p["end"] - p["start"] >= min_step:
            label, codes = replay(name, p["start"] + 3 * interval, p["end"])
            ok = label == "FAST" if name == "matmul" else label == "FAIL_RISK" and "gpu_busy_wait_hang" in codes
            row("PASS" if ok else "FAIL", "verdict_" + name, "%s %s" % (label, codes[:3]))
        elif name in ("matmul", "spin"):
            row("SKIP", "verdict_" + name, "phase of %.0f s is shorter than min_step_seconds %s" % (
                p["end"] - p["start"], min_step))


def check_ras(export_path, phases_path):
    with open(phases_path) as f:
        phases = json.load(f)
    nccl = phases.get("nccl")
    if not nccl:
        row("SKIP", "nccl_ras", "no NCCL phase")
        return
    if nccl.get("skipped"):
        row("SKIP", "nccl_ras", nccl["skipped"])
        return
    polls = []
    with open(export_path) as f:
        for line in f:
            if line.startswith("{") and '"ras"' in line:
                polls += (json.loads(line).get("nccl") or {}).get("ras", [])
    ok = [p for p in polls if p.get("outcome") == "ok"]
    found = nccl.get("nccl_version", "?")
    what = nccl.get("ras", "")
    if found != "?" and tuple(int(x) for x in found.split(".")[:2]) < (2, 24):
        row("SKIP", "nccl_ras", "NCCL %s: %s" % (found, what))
        return
    read = ok[-1].get("nccl_version") if ok else None
    detail = "NCCL %s; %s; stallscope polls: %d, ok %d%s%s" % (
        found, what, len(polls), len(ok), ", it read version %s" % read if read else "",
        "; our STATUS: " + nccl["ras_error"] if nccl.get("ras_error") else "")
    row("PASS" if ok and read == found else "FAIL", "nccl_ras", detail)


def main(argv):
    if len(argv) >= 3 and argv[0] == "snapshot":
        check_snapshot(*argv[1:4])
    elif len(argv) == 5 and argv[0] == "phases":
        check_phases(*argv[1:])
    elif len(argv) == 3 and argv[0] == "ras":
        check_ras(*argv[1:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
