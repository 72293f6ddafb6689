"""The runtime behind the shim's classes.

By default that is ``nccl._hip_compat._hip``, the C module over ``libamdhip64``, which opens the
HIP runtime on its first call. ``set_backend()`` swaps in another object exposing the same
functions (``get_device_count``, ``get_device``, ``set_device``, ``stream_create``, ``malloc``,
...); nccl.core uses it for flavours without a HIP runtime, for example ``UnbackedCuda`` on an
NVIDIA host without a real cuda.core. Importing this module loads nothing.
"""

import threading

__all__ = ["hip", "set_backend", "device_count", "HipError", "NotSupportedError", "UnbackedCuda"]

_lock = threading.Lock()
_backend = None  # None: the C module, imported on first use
_device_count = None  # the device count never changes within a process; cached per backend


def hip():
    """The current backend (the C module unless ``set_backend()`` chose another)."""
    backend = _backend
    if backend is None:
        from .. import _hip as backend
    return backend


def set_backend(backend):
    """Use ``backend`` for every later runtime call (None: the HIP runtime again)."""
    global _backend, _device_count
    with _lock:
        _backend = backend
        _device_count = None


def device_count():
    """The number of devices the backend reports (0 for a HIP runtime without a GPU)."""
    global _device_count
    count = _device_count
    if count is None:
        count = int(hip().get_device_count())
        with _lock:
            _device_count = count
    return count


def _not_supported_class():
    try:
        from nccl._errors import NotSupportedError as cls
    except Exception:
        from .. import _hip

        cls = _hip.NotSupportedError
    return cls


def __getattr__(name):
    # The exception classes come from the C module (or the bindings), on first use only.
    if name == "HipError":
        from .. import _hip

        return _hip.HipError
    if name == "NotSupportedError":
        return _not_supported_class()
    raise AttributeError(f"module '{__name__}' has no attribute '{name}' (HIP shim)")


class UnbackedCuda:
    """A backend for NVIDIA hosts without a real cuda.core: every runtime call raises
    ``NotSupportedError("the cuda.core shim has no CUDA backing; install cuda-core")``."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def unbacked(*args, **kwargs):
            raise _not_supported_class()("the cuda.core shim has no CUDA backing; install cuda-core")

        unbacked.__name__ = name
        return unbacked
