# Stub of nccl.core.buffer: NcclBuffer is C (nccl._ext); docs/architecture.md#buffer-resolution.
from typing import final

from typing_extensions import Self

from nccl.core._types import NcclDataType
from nccl.core.typing import NcclBufferSpec, NcclStreamSpec

__all__ = ["NcclBuffer"]

@final
class NcclBuffer:
    def __new__(cls, buffer: NcclBufferSpec, stream: NcclStreamSpec | None = None) -> Self: ...
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
