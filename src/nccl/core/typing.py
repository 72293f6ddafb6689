"""Types of nccl.core (docs/compatibility.md#names-and-types), as nccl4py 0.6.0's ``nccl.core.typing``:
the buffer, scalar, device, stream and event type aliases defined here, and the enums, dtype and
reduction-op constants and ``NcclInvalid`` (the same objects as ``nccl.core``'s, from
nccl.core._types and nccl._errors)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

import numpy as np

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


if TYPE_CHECKING:
    # A type checker cannot see cuda.core where it is not installed (the HIP shim exists only at
    # run time), so the aliases name what nccl.core reads of each object instead: a cuda.core
    # Buffer is a DLPack producer, a Stream has __cuda_stream__, a Device its device_id, an Event
    # its handle.
    class _DeviceLike(Protocol):
        @property
        def device_id(self) -> int: ...

    class _EventLike(Protocol):
        @property
        def handle(self) -> int: ...

    Buffer = SupportsDLPack
    Device = _DeviceLike
    Stream = _SupportsCudaStream
    Event = _EventLike
else:
    from cuda.core import Buffer, Device, Event, Stream

#: Upstream's name for NcclBufferSpec (outside ``__all__`` there too).
NcclSupportedBuffer = Union[Buffer, SupportsDLPack, SupportsCAI]
#: A buffer argument: a cuda.core Buffer, a DLPack producer (torch, CuPy, JAX, numpy) or an object
#: with ``__cuda_array_interface__``.
NcclBufferSpec = NcclSupportedBuffer
#: A scalar argument (PreMulSum's factor): a Python number, a numpy scalar/array, or a one-element
#: buffer.
NcclScalarSpec = Union[int, float, np.ndarray, NcclBufferSpec]
#: A device argument: a cuda.core Device or a device ordinal.
NcclDeviceSpec = Union[Device, int]
#: A stream argument: a cuda.core Stream, anything with ``__cuda_stream__``, or a raw stream handle.
NcclStreamSpec = Union[Stream, _SupportsCudaStream, int]
#: A CUDA/HIP event: a cuda.core Event (real or the shim's), anything with an int ``handle``, or
#: the handle itself (NCCLCollConfig.launch_completion_event; nccl.core.cuda.get_event_ptr).
NcclEventSpec = Union[Event, int]
