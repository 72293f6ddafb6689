"""The runtime behind the shim's classes.

By default that is ``nccl._hip_compat._hip``, the C module over ``libamdhip64``, which opens the
HIP runtime on its first call. ``set_backend()`` swaps in another object exposing the same
functions (``get_device_count``, ``get_device``, ``set_device``, ``stream_create``, ``malloc``,
...) for the flavours without a HIP runtime (docs/architecture.md#what-backs-the-shim):

* ``HostBackend``: the host flavour's virtual devices, host memory, streams and events that
  complete at once; buffers are host-only, so they export DLPack kDLCPU;
* ``UnbackedCuda``: an NVIDIA host without a real cuda.core; every runtime call raises
  ``NotSupportedError``.

Importing this module loads nothing.
"""

import ctypes
import itertools
import os
import sys
import threading
import time

from nccl._errors import NotSupportedError

__all__ = ["hip", "set_backend", "device_count", "host_memory", "names_host_library", "library_host_backend",
           "HipError", "NotSupportedError", "HostBackend", "UnbackedCuda"]

_lock = threading.Lock()
_backend = None  # None: the C module, imported on first use
_device_count = None  # the device count never changes within a process; cached per backend


def names_host_library():
    """True when ``NCCL_LIBRARY`` names the host backend (``host``): its flavour is then known
    without loading anything. The loader's reading of the variable (nccl._ext; loads nothing)."""
    from nccl import _ext

    return _ext._library_selection()["host"]


def hip():
    """The current backend: the one ``set_backend()`` chose; else, under ``NCCL_LIBRARY=host``,
    the host backend, chosen here on the shim's first call whatever was imported before; else the
    C module over the HIP runtime."""
    global _backend
    backend = _backend
    if backend is None:
        if names_host_library():
            with _lock:
                if _backend is None:
                    _backend = library_host_backend()
                return _backend
        from .. import _hip as backend
    return backend


def set_backend(backend):
    """Use ``backend`` for every later runtime call (None: the default again, see ``hip()``).
    Meant to be called once, before the shim is used: objects made earlier keep their old
    handles, and memory resources (with their Buffers) the backend that made them."""
    global _backend, _device_count
    with _lock:
        _backend = backend
        _device_count = None
        memory = sys.modules.get(__package__ + "._memory")
        if memory is not None:
            memory._resources.clear()


def device_count():
    """The number of devices the backend reports (0 for a HIP runtime without a GPU)."""
    global _device_count
    count = _device_count
    if count is None:
        count = int(hip().get_device_count())
        with _lock:
            _device_count = count
    return count


def host_memory(backend=None):
    """True when the "device" memory of ``backend`` (None: the current one) is host memory (the
    host flavour)."""
    return bool(getattr(hip() if backend is None else backend, "host_memory", False))


def __getattr__(name):
    # HipError comes from the C module, on first use only.
    if name == "HipError":
        from .. import _hip

        return _hip.HipError
    raise AttributeError(f"module '{__name__}' has no attribute '{name}' (HIP shim)")


class UnbackedCuda:
    """A backend for NVIDIA hosts without a real cuda.core: every runtime call raises
    ``NotSupportedError("the cuda.core shim has no CUDA backing; install cuda-core")``."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def unbacked(*args, **kwargs):
            raise NotSupportedError("the cuda.core shim has no CUDA backing; install cuda-core")

        unbacked.__name__ = name
        return unbacked


class HostBackend:
    """Backing for the host flavour (``NCCL_LIBRARY=host``): ``num_devices`` virtual devices
    (default ``NCCL_HOST_NUM_DEVICES``, else 64), host memory, and streams and events that are
    complete as soon as they are used, since the host backend runs every operation eagerly.

    ``get_device``/``set_device`` default to a per-thread current device; pass the host
    backend's ``ncclHostGetDevice``/``ncclHostSetDevice`` wrappers to share its notion.
    """

    host_memory = True
    hipMemcpyDefault = 4
    hipStreamDefault = 0
    hipStreamNonBlocking = 1
    hipEventDefault = 0
    hipEventDisableTiming = 2

    def __init__(self, num_devices=None, get_device=None, set_device=None):
        if num_devices is None:
            num_devices = int(os.environ.get("NCCL_HOST_NUM_DEVICES", "64") or 64)
        self._count = int(num_devices)
        self._get = get_device
        self._set = set_device
        self._tls = threading.local()
        self._lock = threading.Lock()
        self._handles = itertools.count(0x1000, 0x10)
        self._streams = set()
        self._events = {}  # handle -> [timing, recorded time or None]

    def _hip(self):
        from .. import _hip

        return _hip

    def _check(self, device):
        if not 0 <= device < self._count:
            raise ValueError(f"device {device} is out of range; the host backend has {self._count} device(s)")

    def get_device_count(self):
        return self._count

    def get_device(self):
        return self._get() if self._get is not None else getattr(self._tls, "device", 0)

    def set_device(self, device):
        self._check(device)
        if self._set is not None:
            self._set(device)
        else:
            self._tls.device = device

    def device_synchronize(self, device=-1):
        if device >= 0:
            self._check(device)

    def device_get_pci_bus_id(self, device):
        self._check(device)
        return f"host:{device:04d}"

    def _new_handle(self):
        with self._lock:
            return next(self._handles)

    def stream_create(self, flags=0, priority=None, device=-1):
        handle = self._new_handle()
        with self._lock:
            self._streams.add(handle)
        return handle

    def _stream(self, stream):
        if stream != 0 and stream not in self._streams:
            raise ValueError(f"unknown host-backend stream {stream:#x}")

    def stream_destroy(self, stream):
        with self._lock:
            if stream not in self._streams:
                raise ValueError(f"unknown host-backend stream {stream:#x}")
            self._streams.discard(stream)

    def stream_synchronize(self, stream):
        self._stream(stream)

    def stream_wait_event(self, stream, event, flags=0):
        self._stream(stream)
        self._event(event)

    def event_create(self, flags=0, device=-1):
        handle = self._new_handle()
        with self._lock:
            self._events[handle] = [not flags & self.hipEventDisableTiming, None]
        return handle

    def _event(self, event):
        state = self._events.get(event)
        if state is None:
            raise ValueError(f"unknown host-backend event {event:#x}")
        return state

    def event_record(self, event, stream):
        self._stream(stream)
        self._event(event)[1] = time.perf_counter()

    def event_synchronize(self, event):
        self._event(event)

    def event_query(self, event):
        self._event(event)
        return True

    def event_elapsed_time(self, start, end):
        a, b = self._event(start), self._event(end)
        if not (a[0] and b[0]):
            raise RuntimeError("elapsed time needs two events created with EventOptions(enable_timing=True)")
        if a[1] is None or b[1] is None:
            raise RuntimeError("elapsed time needs two recorded events")
        return (b[1] - a[1]) * 1e3

    def event_destroy(self, event):
        with self._lock:
            if self._events.pop(event, None) is None:
                raise ValueError(f"unknown host-backend event {event:#x}")

    def malloc(self, size, device=-1):
        if device >= 0:
            self._check(device)
        return self._hip().host_malloc(size)

    def free(self, ptr):
        self._hip().host_free(ptr)

    def memcpy_async(self, dst, src, nbytes, kind, stream):
        self._stream(stream)
        ctypes.memmove(dst, src, nbytes)

    def memset_async(self, dst, value, nbytes, stream):
        self._stream(stream)
        ctypes.memset(dst, value, nbytes)

    def pointer_get_attributes(self, ptr):
        return ("host", self.get_device(), 0, ptr, False)


class _HostDeviceHooks:
    """The current device of the host backend's own ncclHostGetDevice/ncclHostSetDevice, so that
    the shim and the library agree on it (the device ncclCommInitRank* uses). The library is
    reached on the first call, not when the hooks are made; if it cannot be, a per-thread value
    of our own is used."""

    def __init__(self):
        self._lock = threading.Lock()
        self._fns = None
        self._tls = threading.local()

    def _resolve(self):
        fns = self._fns
        if fns is None:
            with self._lock:
                fns = self._fns
                if fns is None:
                    fns = self._fns = self._open() or ()
        return fns

    @staticmethod
    def _open():
        from nccl.bindings import nccl as _b

        try:
            path = _b.get_library_path()
            if not path or _b.get_library_flavour() != "host":
                return None
            lib = ctypes.CDLL(path)
            getter, setter = lib.ncclHostGetDevice, lib.ncclHostSetDevice
        except (OSError, AttributeError, RuntimeError):
            return None
        getter.argtypes, getter.restype = [ctypes.POINTER(ctypes.c_int)], ctypes.c_int
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
        return getter, setter

    def get_device(self):
        fns = self._resolve()
        if not fns:
            return getattr(self._tls, "device", 0)
        dev = ctypes.c_int(0)
        rc = fns[0](ctypes.byref(dev))
        if rc != 0:
            raise RuntimeError(f"ncclHostGetDevice failed ({rc})")
        return dev.value

    def set_device(self, device):
        fns = self._resolve()
        if not fns:
            self._tls.device = int(device)
            return
        rc = fns[1](int(device))
        if rc != 0:
            raise ValueError(f"ncclHostSetDevice({device}) failed ({rc})")


def library_host_backend():
    """A HostBackend whose current device is the host library's own (ncclHostGetDevice and
    ncclHostSetDevice, reached on first use)."""
    hooks = _HostDeviceHooks()
    return HostBackend(get_device=hooks.get_device, set_device=hooks.set_device)
