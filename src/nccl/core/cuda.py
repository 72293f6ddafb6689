"""Streams and devices of nccl.core (docs/architecture.md#stream-resolution), over ``cuda.core``.

``cuda.core`` is NVIDIA's real package on CUDA hosts, or the shim ``import nccl`` registers under
that name (docs/architecture.md#the-cudacore-shim). With the shim, the runtime behind it follows the loaded library's
flavour: the host backend's virtual devices for ``host``, the HIP runtime for ``rccl``, and "no
CUDA backing" for ``nccl`` (a real cuda.core is needed there). ``NCCL_LIBRARY=host`` is acted on
by the shim itself, at its first call; otherwise the choice is made by the first device call here,
which loads the library to learn its flavour. The C core calls ``get_cuda_device`` and ``get_num_devices`` from here (src/ext/module/lazy.c).
"""

import operator
import threading

from cuda.core import Device, Stream, system

from nccl._ext import get_stream_ptr  # implemented in C


__all__ = ["get_stream_ptr", "get_event_ptr", "get_device_id", "get_cuda_device", "get_cuda_stream", "CudaDeviceContext",
           "get_num_devices"]

_backend_lock = threading.Lock()
_backend_ready = False


def _select_backend(load):
    """Points the shim's runtime at the library's flavour. Nothing to do with a real cuda.core,
    when the backend was chosen explicitly (``_runtime.set_backend``), or under
    ``NCCL_LIBRARY=host`` (the shim takes the host backend itself). Otherwise the library is
    loaded to learn its flavour, if ``load``. Returns True once the choice is made."""
    from nccl._hip_compat import is_cuda_core_shim_registered

    if not is_cuda_core_shim_registered():
        return True
    from nccl._hip_compat.cuda_core_shim import _runtime

    if _runtime._backend is not None:
        return True
    if _runtime.names_host_library():
        return True  # the shim's own first call takes the host backend (docs/architecture.md#what-backs-the-shim)
    if not load:
        return False
    from nccl.bindings import nccl as _b

    try:
        flavour = _b.get_library_flavour()
    except RuntimeError:
        flavour = None  # no library: the HIP runtime (or its own error) stays
    if flavour == "host":
        _runtime.set_backend(_runtime.library_host_backend())
    elif flavour == "nccl":
        _runtime.set_backend(_runtime.UnbackedCuda())
    return True


def _ensure_backend():
    """Makes the backend choice on the first device call (loading the library if needed), once."""
    global _backend_ready
    if _backend_ready:
        return
    with _backend_lock:
        if not _backend_ready:
            _backend_ready = _select_backend(load=True)


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


def get_event_ptr(event):
    """The event handle (an int) of an event spec: an int is used as is, a cuda.core Event (real
    or the shim's) or anything with a ``handle`` gives ``int(event.handle)``. bool is refused, as
    for streams; the C core calls this for NCCLCollConfig.launch_completion_event."""
    if isinstance(event, bool):
        raise TypeError("event must not be a bool")
    if event is None:
        return 0
    try:
        value = operator.index(event)
    except TypeError:
        handle = getattr(event, "handle", None)
        if handle is None:
            raise TypeError(f"event must be an int handle or an object with a handle (a cuda.core Event), "
                            f"got {type(event).__name__}") from None
        value = int(handle)
    if value < 0:
        raise ValueError(f"event handle must not be negative, got {value}")
    return value


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


# NCCL_LIBRARY=host names the flavour without loading anything: nothing is left to choose here.
with _backend_lock:
    _backend_ready = _select_backend(load=False)
