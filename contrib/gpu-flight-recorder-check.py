#!/usr/bin/env python3
"""What this node's PyTorch + NCCL does with the flight-recorder variables stallscope's plugin sets
(spank/flight_recorder_env.cc, doc/hang-evidence.md section 1), one case per child process on one GPU.

The plugin's promise is that its defaults can never kill or stall a rank. Each case starts a one-rank
NCCL process group in a child process with one arrangement of the variables and its directories, runs
collectives, asks for a dump through the FIFO where there is one, and records how the child ended:

  baseline       no flight-recorder variables at all: the reference exit and time
  defaults       what the plugin sets, directories as the plugin makes them; a FIFO request must
                 produce a dump and the rank must run on to exit 0
  dump_missing   the dump prefix in a directory that does not exist (the plugin sets it even then):
                 a request must leave the rank running
  dump_full      the dump prefix on a full filesystem: likewise
  pipe_missing   the pipe prefix in a missing directory: the plugin never sets this (it checks the
                 directory first); recorded to confirm why (PyTorch TORCH_CHECKs the mkfifo)
  pipe_readonly  the pipe prefix in a read-only directory: likewise
  pipe_full      the pipe prefix on a filesystem without free inodes: likewise
  timeout_plain  a collective stuck behind a spinning kernel past a short process-group timeout, no
                 variables: how long PyTorch's watchdog takes to end the rank
  timeout_ours   the same with the plugin's variables: the dump on timeout must appear and the rank
                 must end no later than in timeout_plain (+10 s)
  timeout_nodir  the same with the dump directory missing: no later either

Usage: gpu-flight-recorder-check.py --out DIR [--device N] [--only CASE,...]
Writes DIR/fr-cases.json (one object per case) and DIR/dumps/<case>.rank0 (the dumps the real PyTorch
wrote: fixtures for tests/hang), prints "ROW<TAB>STATUS<TAB>NAME<TAB>DETAIL" lines as gpu-node-checks.py
does. Exit status: 0 no check failed, 1 a check failed, 3 PyTorch, CUDA or NCCL unavailable.
Runs as root (the read-only and full cases mount small tmpfs filesystems; without root they are skipped).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

SPIN_SECONDS = 30      # the stuck collective's spinning kernel in the timeout cases
PG_TIMEOUT_SECONDS = 8  # the process-group timeout in the timeout cases (PyTorch's default is 600)
RUN_SECONDS = 8         # collectives after READY in the other cases
ENTRIES = "2000"        # spank/flight_recorder_env.h kFlightRecorderEntries


def child_main(args):
    """One rank: a one-rank NCCL group, collectives, then either a stuck collective or a clean exit."""
    import datetime
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(args.device)
    dev = torch.device("cuda", args.device)
    timeout = datetime.timedelta(seconds=args.pg_timeout)
    dist.init_process_group("nccl", init_method="file://" + args.store, rank=0, world_size=1,
                            timeout=timeout, device_id=dev)
    x = torch.ones(1 << 20, device=dev)
    for _ in range(10):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    print("READY %.3f" % time.time(), flush=True)
    if args.spin > 0:
        # Cycles per second of torch.cuda._sleep's clock, measured: the spin must outlast the timeout.
        t = time.time()
        torch.cuda._sleep(200_000_000)
        torch.cuda.synchronize()
        rate = 200_000_000 / max(1e-3, time.time() - t)
        torch.cuda._sleep(int(args.spin * rate))
        dist.all_reduce(x)  # enqueued behind the spin: scheduled, not completed
        torch.cuda.synchronize()
    else:
        end = time.time() + args.seconds
        while time.time() < end:
            dist.all_reduce(x)
            torch.cuda.synchronize()
            time.sleep(0.05)
    print("DONE %.3f" % time.time(), flush=True)
    dist.destroy_process_group()
    return 0


def mount_tmpfs(path, options):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path], capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


def plugin_env(dump_prefix, pipe_prefix):
    """The variables plan_flight_recorder_env sets for a job that set none of them."""
    env = {"TORCH_NCCL_TRACE_BUFFER_SIZE": ENTRIES, "TORCH_FR_BUFFER_SIZE": ENTRIES,
           "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}
    if dump_prefix:
        env["TORCH_FR_DUMP_TEMP_FILE"] = dump_prefix
        env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = dump_prefix
    if pipe_prefix:
        env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] = pipe_prefix
    return env


class Case:
    def __init__(self, name, work, env=None, spin=0, request=False, expect=""):
        self.name, self.env, self.spin, self.request, self.expect = name, env or {}, spin, request, expect
        self.dir = os.path.join(work, name)
        self.proc = None
        self.result = {"case": name, "expect": expect}


def build_cases(work, is_root):
    cases = []

    def d(case, *parts):
        return os.path.join(work, case, *parts)

    def good_dirs(case):
        os.makedirs(d(case, "out"), exist_ok=True)
        os.makedirs(d(case, "run"), mode=0o700, exist_ok=True)
        return d(case, "out", "torch-fr-"), d(case, "run", "frpipe.0.")

    cases.append(Case("baseline", work, expect="exit 0"))
    dump, pipe = good_dirs("defaults")
    cases.append(Case("defaults", work, plugin_env(dump, pipe), request=True, expect="exit 0, dump written"))
    _, pipe = good_dirs("dump_missing")
    cases.append(Case("dump_missing", work, plugin_env(d("dump_missing", "gone", "torch-fr-"), pipe),
                      request=True, expect="exit 0 (PyTorch logs the failed dump)"))
    _, pipe = good_dirs("pipe_missing")
    dump = d("pipe_missing", "out", "torch-fr-")
    cases.append(Case("pipe_missing", work, plugin_env(dump, d("pipe_missing", "gone", "frpipe.0.")),
                      expect="the plugin never sets this; doc says the rank aborts"))
    for name, options, prep in (("dump_full", "size=64k,mode=0755", "fill"),
                                ("pipe_readonly", "ro,size=64k,mode=0700", None),
                                ("pipe_full", "size=64k,nr_inodes=1,mode=0700", None)):
        dump, pipe = good_dirs(name)
        target = d(name, "fs")
        case = Case(name, work)
        if not is_root:
            case.result["skipped"] = "not root: cannot mount the small filesystem"
        else:
            ok, err = mount_tmpfs(target, options)
            if not ok:
                case.result["skipped"] = "mount -t tmpfs -o %s failed: %s" % (options, err)
            elif prep == "fill":
                with open(os.path.join(target, "filler"), "wb") as f:
                    try:
                        f.write(b"\0" * (1 << 20))
                    except OSError:
                        pass  # ENOSPC: full, as wanted
        if name == "dump_full":
            case.env = plugin_env(os.path.join(target, "torch-fr-"), pipe)
            case.request, case.expect = True, "exit 0 (PyTorch logs the failed dump)"
        else:
            case.env = plugin_env(dump, os.path.join(target, "frpipe.0."))
            case.expect = "the plugin never sets this; doc says the rank aborts"
        cases.append(case)
    cases.append(Case("timeout_plain", work, spin=SPIN_SECONDS, expect="the watchdog ends the rank"))
    dump, pipe = good_dirs("timeout_ours")
    cases.append(Case("timeout_ours", work, plugin_env(dump, pipe), spin=SPIN_SECONDS,
                      expect="dump on timeout; ends no later than timeout_plain + 10 s"))
    _, pipe = good_dirs("timeout_nodir")
    cases.append(Case("timeout_nodir", work,
                      plugin_env(d("timeout_nodir", "gone", "torch-fr-"), pipe), spin=SPIN_SECONDS,
                      expect="ends no later than timeout_plain + 10 s"))
    return cases


def start(case, args):
    os.makedirs(case.dir, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_NCCL_", "TORCH_FR_"))}
    env.update(case.env)
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--device", str(args.device),
           "--store", os.path.join(case.dir, "store"), "--spin", str(case.spin),
           "--seconds", str(RUN_SECONDS), "--pg-timeout", str(PG_TIMEOUT_SECONDS if case.spin else 600)]
    case.out = open(os.path.join(case.dir, "child.log"), "w+")
    case.started = time.time()
    case.proc = subprocess.Popen(cmd, env=env, stdout=case.out, stderr=subprocess.STDOUT)
    case.ended = None

    def watch():  # the moment the child ended, not when finish() got to it
        case.proc.wait()
        case.ended = time.time()

    threading.Thread(target=watch, daemon=True).start()
    case.result["env"] = case.env


def log_text(case):
    case.out.flush()
    with open(case.out.name, errors="replace") as f:
        return f.read()


def ready_at(case):
    # Another thread's output (PyTorch's C++ log goes to the same file) can share the line.
    m = re.search(r"READY (\d+\.\d{3})", log_text(case))
    return float(m.group(1)) if m else None


def pipe_path(case):
    prefix = case.env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
    return prefix + "0.pipe" if prefix else None


def dump_path(case):
    prefix = case.env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    return prefix + "0" if prefix else None


def request_dump(case):
    """Writes one byte to the rank's FIFO, never blocking (O_NONBLOCK: no reader is ENXIO)."""
    path = pipe_path(case)
    deadline = time.time() + 5
    while time.time() < deadline and not os.path.exists(path):
        time.sleep(0.1)
    if not os.path.exists(path):
        return "no FIFO at %s" % path
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        return "open: %s" % e
    try:
        os.write(fd, b"1")
    finally:
        os.close(fd)
    return "requested"


def finish(case, out_dir, deadline):
    r = case.result
    timeout = max(1, deadline - time.time())
    try:
        rc = case.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        case.proc.kill()
        rc = case.proc.wait()
        r["killed_by_harness"] = True
    while case.ended is None:
        time.sleep(0.01)
    r["seconds"] = round(case.ended - case.started, 1)
    ready = ready_at(case)
    r["seconds_after_ready"] = round(case.ended - ready, 1) if ready else None
    r["returncode"] = rc
    r["signal"] = -rc if rc < 0 else None
    text = log_text(case)
    r["done"] = re.search(r"DONE \d", text) is not None
    r["log_tail"] = text.splitlines()[-12:]
    pipe = pipe_path(case)
    r["fifo_seen"] = case.__dict__.get("fifo_seen")
    dump = dump_path(case)
    if dump and os.path.isfile(dump) and os.path.getsize(dump) > 0:
        os.makedirs(os.path.join(out_dir, "dumps"), exist_ok=True)
        kept = os.path.join(out_dir, "dumps", case.name + ".rank0")
        shutil.copyfile(dump, kept)
        r["dump"] = {"bytes": os.path.getsize(dump), "kept": kept}
    else:
        r["dump"] = None
    r["pipe"] = pipe


def verdict(cases):
    """ROW lines: PASS/FAIL for what the plugin sets, INFO for what it refuses to set."""
    by = {c.name: c.result for c in cases}
    rows = []
    base_t = (by.get("timeout_plain") or {}).get("seconds_after_ready")
    for c in cases:
        r = c.result
        if r.get("skipped"):
            rows.append(("SKIP", c.name, r["skipped"]))
            continue
        how = "exit %s" % r["returncode"] if r["signal"] is None else "signal %s" % r["signal"]
        detail = "%s after %s s (%s)" % (how, r["seconds"], r.get("request") or "no request")
        if c.name in ("baseline", "defaults", "dump_missing", "dump_full"):
            ok = r["returncode"] == 0 and r["done"]
            if c.name == "defaults":
                ok = ok and r["dump"] is not None
                detail += "; dump %s" % ("%d bytes" % r["dump"]["bytes"] if r["dump"] else "missing")
            rows.append(("PASS" if ok else "FAIL", c.name, detail))
        elif c.name.startswith("pipe_"):
            matches = r["returncode"] != 0 and not r["done"]
            rows.append(("INFO", c.name, detail + "; %s the doc (rank aborts)" %
                         ("matches" if matches else "DOES NOT match")))
        elif c.name == "timeout_plain":
            rows.append(("INFO", c.name, detail))
        else:
            t = r["seconds_after_ready"]
            ok = base_t is not None and t is not None and t <= base_t + 10 and not r.get("killed_by_harness")
            if c.name == "timeout_ours":
                ok = ok and r["dump"] is not None
                detail += "; dump %s" % ("%d bytes" % r["dump"]["bytes"] if r["dump"] else "missing")
            detail += "; %s s after READY vs %s s without the variables" % (t, base_t)
            rows.append(("PASS" if ok else "FAIL", c.name, detail))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="directory for fr-cases.json and dumps/")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("--spin", type=float, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=RUN_SECONDS, help=argparse.SUPPRESS)
    ap.add_argument("--pg-timeout", type=float, default=600, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_main(args)
    if not args.out:
        ap.error("--out DIR is required")
    try:
        import torch
        import torch.distributed as dist
        if not torch.cuda.is_available() or not dist.is_nccl_available():
            raise RuntimeError("PyTorch sees no CUDA device or has no NCCL")
        nccl = torch.cuda.nccl.version()
        versions = {"torch": torch.__version__,
                    "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
                    "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(args.device)}
    except Exception as e:  # noqa: BLE001 - any import or CUDA problem means "cannot run here"
        print("gpu-flight-recorder-check: %s" % e, file=sys.stderr)
        return 3
    os.makedirs(args.out, exist_ok=True)
    out_dir = os.path.abspath(args.out)
    work = tempfile.mkdtemp(prefix="stallscope-frcheck-")
    cases = build_cases(work, os.geteuid() == 0)
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c.name in wanted]
    # All at once on the one GPU: one-rank groups with their own file stores do not meet.
    for c in cases:
        if not c.result.get("skipped"):
            start(c, args)
    for c in cases:
        if c.proc and c.request:
            deadline = time.time() + 90
            while ready_at(c) is None and c.proc.poll() is None and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(1.5)  # the monitor thread makes the FIFO once the group is up
            c.fifo_seen = bool(pipe_path(c)) and os.path.exists(pipe_path(c))
            c.result["request"] = request_dump(c) if c.proc.poll() is None else "rank gone before the request"
    for c in cases:
        if c.proc:
            if not c.request:
                c.fifo_seen = bool(pipe_path(c)) and os.path.exists(pipe_path(c))
            finish(c, out_dir, time.time() + 120)
    rows = verdict(cases)
    with open(os.path.join(out_dir, "fr-cases.json"), "w") as f:
        json.dump({"versions": versions, "cases": [c.result for c in cases], "rows": rows}, f, indent=1)
    for status, name, detail in rows:
        print("ROW\t%s\tfr_%s\t%s" % (status, name, detail))
    for c in cases:  # unmount what build_cases mounted
        fs = os.path.join(c.dir, "fs")
        if os.path.ismount(fs):
            subprocess.run(["umount", fs], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if any(r[0] == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
