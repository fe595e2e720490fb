import os, threading, time, torch
_timeout = 600
def is_nccl_available(): return True
def _monitor():
    pipe = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
    dump = os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    if pipe:
        p = pipe + "0.pipe"
        try:
            if os.path.exists(p): os.unlink(p)
            os.mkfifo(p)
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as e:
            print("terminate:", e, flush=True); os.abort()
        while True:
            try: b = os.read(fd, 1)
            except BlockingIOError: b = b""
            if b and dump:
                try:
                    with open(dump + "0", "wb") as f: f.write(b"\x80\x02}q\x00.")
                except OSError as e: print("Error opening file", e, flush=True)
            time.sleep(0.5)
def init_process_group(*a, timeout=None, **k):
    global _timeout
    _timeout = timeout.total_seconds()
    threading.Thread(target=_monitor, daemon=True).start()
def all_reduce(x):
    if torch._busy_until - time.time() > _timeout:
        def wd():
            time.sleep(_timeout)
            dump = os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
            if dump and os.environ.get("TORCH_NCCL_DUMP_ON_TIMEOUT"):
                try: open(dump + "0", "wb").write(b"x")
                except OSError: pass
            os.abort()
        threading.Thread(target=wd, daemon=True).start()
def destroy_process_group(): pass
