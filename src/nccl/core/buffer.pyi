# Stub of nccl.core.buffer: NcclBuffer is C (nccl._ext); docs/architecture.md#buffer-resolution.
from nccl.core._types import NcclDataType
from nccl.core.typing import NcclBufferSpec, NcclStreamSpec

from nccl.core.memory import mem_alloc as mem_alloc
from nccl.core.memory import mem_free as mem_free

__all__ = ["mem_alloc", "mem_free", "NcclBuffer"]

class NcclBuffer:
    def __init__(self, buffer: NcclBufferSpec, stream: NcclStreamSpec | None = None) -> None: ...
    @property
    def ptr(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def dtype(self) -> NcclDataType: ...
    @property
    def device_id(self) -> int: ...  # -1 for host memory
    @property
    def nbytes(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
