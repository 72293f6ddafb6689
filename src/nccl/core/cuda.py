"""Streams and devices of nccl.core (API.md section 5.6), over ``cuda.core``.

``cuda.core`` is NVIDIA's real package on CUDA hosts, or the shim ``import nccl`` registers under
that name (API.md section 6). With the shim, the runtime behind it follows the loaded library's
flavour, chosen on the first device call here: the host backend's virtual devices for ``host``,
the HIP runtime for ``rccl``, and "no CUDA backing" for ``nccl`` (a real cuda.core is needed
there). The C core calls ``get_cuda_device`` and ``get_num_devices`` from here (src/ext/lazy.c).
"""

import ctypes
import operator
import threading

from cuda.core import Device, Stream, system

from nccl.core._c import c_name as _c_name

get_stream_ptr = _c_name("get_stream_ptr", "function")

__all__ = ["get_stream_ptr", "get_device_id", "get_cuda_device", "get_cuda_stream", "CudaDeviceContext",
           "get_num_devices"]

_backend_lock = threading.Lock()
_backend_ready = False


def _host_device_hooks(path):
    """ncclHostGetDevice/ncclHostSetDevice of the loaded host backend, so that the shim and the
    library agree on the current device; (None, None) if they cannot be reached."""
    try:
        lib = ctypes.CDLL(path)
        getter, setter = lib.ncclHostGetDevice, lib.ncclHostSetDevice
    except (OSError, AttributeError, TypeError):
        return None, None
    getter.argtypes, getter.restype = [ctypes.POINTER(ctypes.c_int)], ctypes.c_int
    setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int

    def get_device():
        dev = ctypes.c_int(0)
        rc = getter(ctypes.byref(dev))
        if rc != 0:
            raise RuntimeError(f"ncclHostGetDevice failed ({rc})")
        return dev.value

    def set_device(device):
        rc = setter(int(device))
        if rc != 0:
            raise ValueError(f"ncclHostSetDevice({device}) failed ({rc})")

    return get_device, set_device


def _ensure_backend():
    """Points the shim's runtime at the loaded library's flavour, once. Nothing to do with a real
    cuda.core, or when the backend was chosen explicitly (``_runtime.set_backend``)."""
    global _backend_ready
    if _backend_ready:
        return
    with _backend_lock:
        if _backend_ready:
            return
        from nccl._hip_compat import is_cuda_core_shim_registered

        if is_cuda_core_shim_registered():
            from nccl._hip_compat.cuda_core_shim import _runtime

            if _runtime._backend is None:
                from nccl.bindings import nccl as _b

                try:
                    flavour = _b.get_library_flavour()
                except (ImportError, RuntimeError):
                    flavour = None  # no library: the HIP runtime (or its own error) stays
                if flavour == "host":
                    get, set_ = _host_device_hooks(_b.get_library_path())
                    _runtime.set_backend(_runtime.HostBackend(get_device=get, set_device=set_))
                elif flavour == "nccl":
                    _runtime.set_backend(_runtime.UnbackedCuda())
        _backend_ready = True


def get_num_devices():
    """The number of devices of the runtime behind cuda.core."""
    _ensure_backend()
    return int(system.get_num_devices())


def get_cuda_device(device_id=None):
    """The cuda.core Device for an ordinal (None: the current device)."""
    _ensure_backend()
    if isinstance(device_id, Device):
        return device_id
    return Device(device_id)


def get_device_id(device=None):
    """An int is returned as is, a Device gives its ``device_id``, None the current device."""
    if device is None:
        return get_cuda_device(None).device_id
    if isinstance(device, Device):
        return device.device_id
    if isinstance(device, bool):
        raise TypeError("device must be a cuda.core Device, an int or None, got bool")
    try:
        return operator.index(device)
    except TypeError:
        raise TypeError(f"device must be a cuda.core Device, an int or None, got {type(device).__name__}") from None


def get_cuda_stream(stream=None):
    """A cuda.core Stream for a stream spec (None: the default stream, handle 0)."""
    _ensure_backend()
    if isinstance(stream, Stream):
        return stream
    return Stream.from_handle(0 if stream is None else get_stream_ptr(stream))


class CudaDeviceContext:
    """``with CudaDeviceContext(device):`` makes ``device`` current and restores the previous
    current device on exit."""

    def __init__(self, device):
        self._device = device
        self._previous = None

    def __enter__(self):
        _ensure_backend()
        self._previous = Device()
        target = get_cuda_device(get_device_id(self._device))
        target.set_current()
        return target

    def __exit__(self, *exc):
        if self._previous is not None:
            self._previous.set_current()
            self._previous = None
        return False
