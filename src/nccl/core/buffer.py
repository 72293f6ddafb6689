"""Buffer resolution (docs/architecture.md#buffer-resolution): ``NcclBuffer(buffer, stream=None)`` gives ``ptr``,
``count``, ``dtype`` and ``device_id`` of any supported array object. Implemented in C.

``mem_alloc``/``mem_free`` are nccl.core.memory's, here too as in nccl4py 0.6.0's module."""

from nccl._ext import NcclBuffer  # implemented in C
from nccl.core.memory import mem_alloc, mem_free

__all__ = ["mem_alloc", "mem_free", "NcclBuffer"]
