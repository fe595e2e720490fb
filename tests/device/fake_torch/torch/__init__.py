# A stand-in for exercising gpu-flight-recorder-check.py's harness without a GPU (not committed).
import os, threading, time
__version__ = "0.fake"
class _V: cuda = "0"
version = _V()
class _Cuda:
    def is_available(self): return True
    def set_device(self, d): pass
    def synchronize(self):
        global _busy_until
        while time.time() < _busy_until: time.sleep(0.01)
    def get_device_name(self, d): return "fake"
    def _sleep(self, cycles):
        global _busy_until
        _busy_until = max(time.time(), _busy_until) + cycles / 1e9
    class nccl:
        @staticmethod
        def version(): return (2, 27, 5)
_busy_until = 0
cuda = _Cuda()
def device(*a): return a
def ones(*a, **k): return 0
