"""Types of nccl.core (docs/compatibility.md#names-and-types), as nccl4py 0.6.0's ``nccl.core.typing``:
the buffer, scalar, device, stream and event type aliases defined here, and the enums, dtype and
reduction-op constants and ``NcclInvalid`` (the same objects as ``nccl.core``'s, from
nccl.core._types and nccl._errors)."""

from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np
from cuda.core import Buffer, Device, Event, Stream

from nccl._errors import NcclInvalid
from nccl.core._types import (
    AVG, BFLOAT16, CHAR, DOUBLE, FLOAT, FLOAT8E4M3, FLOAT8E5M2, FLOAT16, FLOAT32, FLOAT64, HALF, INT,
    INT8, INT32, INT64, MAX, MIN, PROD, SUM, UINT8, UINT32, UINT64, NcclCftCap, NcclCftTeamMode, NcclCommMemStat,
    NcclDataType, NcclGinConnectionType, NcclGinType, NcclHostCftMode, NcclNvlsHostMode, NcclRedOp,
)

__all__ = [
    "NcclDataType", "NcclRedOp", "NcclGinType", "NcclGinConnectionType", "NcclHostCftMode", "NcclNvlsHostMode",
    "NcclCftTeamMode", "NcclCftCap", "NcclCommMemStat",
    "NcclBufferSpec", "NcclScalarSpec", "NcclDeviceSpec", "NcclStreamSpec", "NcclEventSpec",
    "NcclInvalid",
    "INT8", "CHAR", "UINT8", "INT32", "INT", "UINT32", "INT64", "UINT64", "FLOAT16", "HALF",
    "FLOAT32", "FLOAT", "FLOAT64", "DOUBLE", "BFLOAT16", "FLOAT8E4M3", "FLOAT8E5M2",
    "SUM", "PROD", "MAX", "MIN", "AVG",
]


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


# NcclSupportedBuffer: upstream's name for the same union (outside __all__ there too).
NcclSupportedBuffer = Union[Buffer, SupportsDLPack, SupportsCAI]
NcclBufferSpec = NcclSupportedBuffer
NcclScalarSpec = Union[int, float, np.ndarray, NcclBufferSpec]
NcclDeviceSpec = Union[Device, int]
NcclStreamSpec = Union[Stream, _SupportsCudaStream, int]
# A CUDA/HIP event: a cuda.core Event (real or the shim's), anything with an int ``handle``, or
# the handle itself (NCCLCollConfig.launch_completion_event; nccl.core.cuda.get_event_ptr).
NcclEventSpec = Union[Event, int]
