"""Framework helpers (docs/compatibility.md#interop): ``nccl.core.interop.cupy`` and
``nccl.core.interop.torch``, also reachable as ``nccl.core.cupy`` / ``nccl.core.torch``.

Importing them never imports the framework; their functions do, on first use, and raise
ModuleNotFoundError when it is not installed.
"""

__all__ = ["cupy", "torch"]
