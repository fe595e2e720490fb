#!/usr/bin/env python3
"""One rank of a hung "training" job for the real-cluster hang test (tests/integration/multinode_hang.sh).

PyTorch with NCCL cannot run here (no GPU; Debian's python3-torch is CPU-only), so this stands in for the
one part of it stallscope touches: the flight recorder's FIFO, as doc/hang-evidence.md section 1 says
PyTorch's monitor thread handles it (unlink, mkfifo 0666, open O_RDONLY|O_NONBLOCK, a non-blocking read
every wake-up; any byte read -> one dump to <TORCH_NCCL_DEBUG_INFO_TEMP_FILE><global rank>). The dump
written is the fixture's file for this rank (fixtures/hang/fr/<scenario>/nccl_trace_rank_<rank>), laid
out as PyTorch's documented format (fixtures/hang/make_fr_dumps.py).

The main thread "hangs" for SECONDS in one blocking call: a rank waiting inside a collective blocks in a
futex (an Event wait); the rank named by --behind is still in its own work (a sleep: another wchan, as a
rank stuck in data loading or compute before the collective would be). It measures what stallscope must
never do to it: any signal received, and how late a ticker thread's 0.1 s wake-ups came (a stopped or
starved process wakes late).

  fake_torch_rank.py FIXTURE_DIR SECONDS [--behind RANK]
Prints one line "rank R on HOST: dumps D, signals [...], max wake lateness L s"; exit 0 (2 on bad usage).
"""
import argparse
import os
import shutil
import signal
import socket
import stat
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture_dir")
    ap.add_argument("seconds", type=float)
    ap.add_argument("--behind", type=int, default=-1)
    args = ap.parse_args()
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    signals = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP, signal.SIGCONT,
                signal.SIGQUIT, signal.SIGALRM):
        signal.signal(sig, lambda s, _frame: signals.append(signal.Signals(s).name))

    dumps = [0]
    pipe_prefix = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
    dump_prefix = os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    stop = threading.Event()
    if pipe_prefix:
        path = "%s%d.pipe" % (pipe_prefix, rank)
        if os.path.lexists(path):
            os.unlink(path)
        os.mkfifo(path, 0o666)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        assert stat.S_ISFIFO(os.fstat(fd).st_mode)

        def monitor():  # PyTorch's monitor thread wakes every TORCH_NCCL_COORD_CHECK_MILSEC (1 s)
            while not stop.wait(0.5):
                try:
                    data = os.read(fd, 64)
                except BlockingIOError:
                    data = b""
                if data and dump_prefix:
                    source = os.path.join(args.fixture_dir, "nccl_trace_rank_%d" % rank)
                    if os.path.exists(source):
                        shutil.copyfile(source, "%s%d" % (dump_prefix, rank))
                        dumps[0] += 1

        threading.Thread(target=monitor, daemon=True).start()

    # The main thread blocks once for the whole hang (a rank that wakes now and then can be caught
    # runnable by the /proc sweep and look like the odd one out); a ticker thread measures how late its
    # 0.1 s wake-ups come, which a stopped or starved process would show.
    lateness = [0.0]

    def ticker():
        while not stop.is_set():
            planned = time.monotonic() + 0.1
            time.sleep(0.1)
            lateness[0] = max(lateness[0], time.monotonic() - planned)

    threading.Thread(target=ticker, daemon=True).start()
    end = time.monotonic() + args.seconds
    waiting = threading.Event()
    while time.monotonic() < end:  # a signal handler may end a wait early: wait again for the rest
        if rank == args.behind:
            time.sleep(max(0.0, end - time.monotonic()))
        else:
            waiting.wait(max(0.0, end - time.monotonic()))
    stop.set()
    print("rank %d on %s: dumps %d, signals %s, max wake lateness %.2f s"
          % (rank, socket.gethostname(), dumps[0], signals, lateness[0]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
