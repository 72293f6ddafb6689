"""ROCm compatibility: a HIP-backed subset of NVIDIA's ``cuda.core``.

``register_cuda_core_shim()`` installs ``nccl._hip_compat.cuda_core_shim`` under the names
``cuda.core``, ``cuda.core.experimental`` and their submodules in ``sys.modules`` when no real
``cuda.core`` should be used (docs/architecture.md#when-the-shim-is-registered). ``import nccl`` calls it once. It
imports only
the standard library and never opens the HIP runtime; the runtime (``libamdhip64``) is opened by
the first shim call that needs a device.
"""

__all__ = ["register_cuda_core_shim", "is_cuda_core_shim_registered"]


def register_cuda_core_shim(force=None):
    """Register the shim as ``cuda.core`` unless a real ``cuda.core`` should be used.

    ``force=True`` registers it even when a real ``cuda.core`` is importable, ``force=False``
    never registers it; ``force=None`` (the default) follows ``NCCL4PY_CUDA_CORE_SHIM`` (``1``
    always, ``0`` never) and otherwise registers when no real ``cuda.core`` is importable, on a
    ROCm host (a ``kfd`` node in ``/dev`` or ``NCCL4PY_DEV_DIR``) or when ``NCCL_LIBRARY`` names
    RCCL or the host backend.

    Nothing is replaced once ``"cuda.core"`` is in ``sys.modules``. Idempotent and thread-safe.
    Returns True if ``cuda.core`` is the shim after the call.
    """
    from . import _register

    return _register.register(force)


def is_cuda_core_shim_registered():
    """True if ``sys.modules["cuda.core"]`` is this shim. Never imports anything."""
    from . import _register

    return _register.is_registered()
