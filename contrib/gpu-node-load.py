#!/usr/bin/env python3
"""Load phases for contrib/validate-gpu-node.sh, driven through PyTorch on one GPU.

Writes the phases it ran as JSON ({"phases": [{"name", "start", "end"}], "gpu", "nccl": {...}}) so the
kit can check each phase in stallscope's timeline. Phases (seconds at --scale 1):
  idle 30         nothing runs on the GPU
  matmul 60       bf16 matmul burn: utilization and tensor activity high, the verdict FAST
  copy 30         device-to-device copies of large buffers: DRAM bandwidth high, no tensor work
  spin 60         one thread block spinning on the GPU clock (torch.cuda._sleep): utilization ~100 %
                  while SM activity is ~1/number of SMs, the busy-wait hang signature
  idle_end 60     nothing runs again
  nccl 75         (with --nccl) a one-rank NCCL all-reduce loop with NCCL RAS as NCCL enables it

Exit status: 0 ran, 3 PyTorch or CUDA unavailable (the last stderr line says why), 1 failure.
"""
import argparse
import json
import os
import socket
import sys
import time

PHASES = [("idle", 30), ("matmul", 60), ("copy", 30), ("spin", 60), ("idle_end", 60)]
NCCL_SECONDS = 75
# NCCL releases whose RAS crashed under repeated STATUS polling (NVIDIA/nccl#1669, #1718, #1762, fixed in
# 2.29.2); stallscope polls them 10x less often (nccl_source.cc status_interval_factor).
RAS_FIRST = (2, 24, 0)
RAS_POLL_CRASH_RANGE = ((2, 26, 0), (2, 29, 2))


def unavailable(why):
    print("gpu-node-load: " + why, file=sys.stderr)
    sys.exit(3)


def run_for(seconds, step):
    """Calls step() until `seconds` passed; returns how many times it ran."""
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        step()
        n += 1
    return n


def phase_matmul(torch, seconds):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)

    def step():
        for _ in range(8):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()

    return {"iterations": run_for(seconds, step)}


def phase_copy(torch, seconds):
    # 2 GiB buffers: far larger than any L2, so every copy streams through HBM/GDDR.
    free, _ = torch.cuda.mem_get_info()
    elements = min(1 << 29, int(free * 0.3) // 4)
    src = torch.empty(elements, device="cuda", dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)

    def step():
        for _ in range(8):
            dst.copy_(src)
        torch.cuda.synchronize()

    return {"iterations": run_for(seconds, step), "bytes_per_copy": elements * 4}


def phase_spin(torch, seconds):
    # torch.cuda._sleep launches one single-thread block that spins on clock64() for the given cycles:
    # the GPU reads 100 % "utilization" while one SM of all is active, as a kernel spin-waiting on a flag.
    if not hasattr(torch.cuda, "_sleep"):
        return {"skipped": "torch.cuda._sleep is missing from this PyTorch"}
    clock_hz = 1.0e9
    try:
        clock_hz = torch.cuda.clock_rate() * 1.0e6  # MHz, needs pynvml in some releases
    except Exception:  # noqa: BLE001 - any failure: a conservative 1 GHz
        pass
    cycles = int(clock_hz * 0.5)  # ~0.5 s per launch; a few launches queued keep the GPU busy between them

    def step():
        for _ in range(2):
            torch.cuda._sleep(cycles)
        torch.cuda.synchronize()

    return {"iterations": run_for(seconds, step), "cycles_per_launch": cycles}


def ras_status_text(addr, timeout=20):
    """One STATUS of the NCCL RAS service (the protocol of NCCL's ncclras client)."""
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(b"CLIENT PROTOCOL 2\n")
        hello = s.recv(256).decode(errors="replace")
        s.sendall(b"STATUS\n")
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    return hello, b"".join(chunks).decode(errors="replace")


def phase_nccl(torch, seconds, ras_addr, ras_text_out):
    import torch.distributed as dist

    info = {}
    try:
        version = torch.cuda.nccl.version()
        info["nccl_version"] = ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)
        version = version if isinstance(version, tuple) else (version // 10000, version // 100 % 100, version % 100)
    except Exception as e:  # noqa: BLE001
        return {"skipped": "this PyTorch has no NCCL: %s" % e}
    if version < RAS_FIRST:
        info["ras"] = "NCCL %s predates RAS (2.24): all-reduce only, no RAS query" % info["nccl_version"]
    elif RAS_POLL_CRASH_RANGE[0] <= version < RAS_POLL_CRASH_RANGE[1]:
        info["ras"] = ("NCCL %s crashes under repeated RAS polling (fixed in 2.29.2): one STATUS after init, "
                       "stallscope polls 10x less often" % info["nccl_version"])
    else:
        info["ras"] = "NCCL %s: RAS on as NCCL enables it, STATUS after init" % info["nccl_version"]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("nccl", rank=0, world_size=1)
    x = torch.ones(64 << 20, device="cuda", dtype=torch.float32)  # 256 MiB per all-reduce
    dist.all_reduce(x)
    torch.cuda.synchronize()
    start = time.time()
    ras_done = version < RAS_FIRST

    def step():
        for _ in range(4):
            dist.all_reduce(x)
        torch.cuda.synchronize()

    n = 0
    while time.time() < start + seconds:
        step()
        n += 1
        # One query of our own, 10 s after init (never during init: NVIDIA/nccl#1669), for the capture.
        if not ras_done and time.time() >= start + 10:
            ras_done = True
            try:
                hello, text = ras_status_text(ras_addr)
                info["ras_hello"] = hello.strip()
                if ras_text_out:
                    with open(ras_text_out, "w") as f:
                        f.write(text)
                info["ras_status_bytes"] = len(text)
            except OSError as e:
                info["ras_error"] = "%s: %s" % (ras_addr, e)
    info["iterations"] = n
    dist.destroy_process_group()
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phases-out", required=True, help="where to write the phases JSON")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every phase's length (test runs)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    ap.add_argument("--nccl", action="store_true", help="also run the one-rank NCCL all-reduce phase")
    ap.add_argument("--ras-addr", default=os.environ.get("NCCL_RAS_ADDR", "localhost:28028"))
    ap.add_argument("--ras-text-out", default="", help="where to write the RAS STATUS text")
    args = ap.parse_args()
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - ImportError or a broken install
        unavailable("PyTorch not importable (%s)" % e.__class__.__name__)
    if not torch.cuda.is_available():
        unavailable("PyTorch %s sees no CUDA device" % torch.__version__)
    torch.cuda.set_device(args.device)
    props = torch.cuda.get_device_properties(args.device)
    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": args.device,
           "gpu": props.name, "sm_count": props.multi_processor_count, "phases": []}
    runners = {"matmul": phase_matmul, "copy": phase_copy, "spin": phase_spin}
    torch.zeros(1, device="cuda")  # context creation outside the first phase
    torch.cuda.synchronize()
    for name, seconds in PHASES:
        start = time.time()
        if name in runners:
            detail = runners[name](torch, seconds * args.scale)
        else:
            time.sleep(seconds * args.scale)
            detail = {}
        out["phases"].append({"name": name, "start": start, "end": time.time(), **detail})
        print("gpu-node-load: phase %s done (%.0f s)" % (name, time.time() - start), file=sys.stderr)
    if args.nccl:
        start = time.time()
        detail = phase_nccl(torch, NCCL_SECONDS * args.scale, args.ras_addr, args.ras_text_out)
        out["nccl"] = detail
        out["phases"].append({"name": "nccl", "start": start, "end": time.time()})
    with open(args.phases_out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
