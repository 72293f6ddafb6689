"""Type aliases of nccl.core (docs/compatibility.md#names-and-types)."""

from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np
from cuda.core import Buffer, Device, Event, Stream

__all__ = ["NcclBufferSpec", "NcclScalarSpec", "NcclDeviceSpec", "NcclStreamSpec", "NcclEventSpec"]


@runtime_checkable
class SupportsDLPack(Protocol):
    """A DLPack producer."""

    def __dlpack__(self, *, stream: Any = None) -> Any: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...


@runtime_checkable
class SupportsCAI(Protocol):
    """An object with ``__cuda_array_interface__`` (version >= 3)."""

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...


@runtime_checkable
class _SupportsCudaStream(Protocol):
    def __cuda_stream__(self) -> tuple[int, int]: ...


NcclBufferSpec = Union[Buffer, SupportsDLPack, SupportsCAI]
NcclScalarSpec = Union[int, float, np.ndarray, NcclBufferSpec]
NcclDeviceSpec = Union[Device, int]
NcclStreamSpec = Union[Stream, _SupportsCudaStream, int]
# A CUDA/HIP event: a cuda.core Event (real or the shim's), anything with an int ``handle``, or
# the handle itself (NCCLCollConfig.launch_completion_event; nccl.core.cuda.get_event_ptr).
NcclEventSpec = Union[Event, int]
