# Stub of nccl.core.buffer: NcclBuffer is C (nccl._ext); docs/architecture.md#buffer-resolution.
from typing import final

from typing_extensions import Self

from nccl.core._types import NcclDataType
from nccl.core.typing import NcclBufferSpec, NcclStreamSpec

from nccl.core.memory import mem_alloc as mem_alloc
from nccl.core.memory import mem_free as mem_free

__all__ = ["mem_alloc", "mem_free", "NcclBuffer"]

@final
class NcclBuffer:
    """A resolved view of an array object (torch, cupy, numpy, cuda.core Buffer, DLPack, CUDA array
    interface, or on the host backend any buffer-protocol object): ptr, count, dtype, device_id.
    Raises NcclInvalid for unsupported types, dtypes or non-dense layouts. Keeps no reference to
    buffer: the caller keeps the memory alive.
    """
    def __new__(cls, buffer: NcclBufferSpec, stream: NcclStreamSpec | None = None) -> Self: ...
    @property
    def ptr(self) -> int:
        """Address of the first element."""
    @property
    def count(self) -> int:
        """Number of elements of dtype."""
    @property
    def dtype(self) -> NcclDataType:
        """The NcclDataType of the elements."""
    @property
    def device_id(self) -> int:
        """Device ordinal, or -1 for host memory."""
    @property
    def nbytes(self) -> int:
        """count * dtype.itemsize."""
    @property
    def readonly(self) -> bool:
        """The producer marked the memory read-only."""
