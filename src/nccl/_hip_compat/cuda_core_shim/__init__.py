"""The subset of NVIDIA's ``cuda.core`` that nccl.core needs, backed by the HIP runtime.

Registered under ``cuda.core`` by ``nccl._hip_compat.register_cuda_core_shim()``. Importing this
package, or resolving any of its names, never opens the HIP runtime: ``libamdhip64`` is opened by
the first call that needs a device (``NCCL4PY_HIP_LIBRARY`` names it explicitly). A missing
runtime raises ``NotSupportedError`` (a ``RuntimeError``) from that call, and a failing HIP call
raises ``HipError`` (also a ``RuntimeError``) whose message names the HIP function; both are
served here. The backing can be switched with ``_runtime.set_backend()`` (host flavour, or an
NVIDIA host without a real cuda.core).
"""

import importlib

_NAMES = {
    "Device": "_device",
    "Stream": "_stream",
    "StreamOptions": "_stream",
    "default_stream": "_stream",
    "Event": "_event",
    "EventOptions": "_event",
    "Buffer": "_memory",
    "MemoryResource": "_memory",
    "get_num_devices": "_system",
    "StridedMemoryView": "_memoryview",
    "args_viewable_as_strided_memory": "_memoryview",
    "IsStreamType": "typing",
    "IsStreamT": "typing",
    "DevicePointerType": "typing",
    "DevicePointerT": "typing",
    "HipError": "_runtime",
    "NotSupportedError": "_runtime",
}

__all__ = sorted(_NAMES)


def __getattr__(name):
    submodule = _NAMES.get(name)
    if submodule is None:
        raise AttributeError(f"module '{__name__}' has no attribute '{name}' (HIP shim)")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
