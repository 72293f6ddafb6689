"""Typing names of cuda.core, old (pre-1.0) and new. Pure Python; never loads a runtime."""

from typing import Optional, Protocol, runtime_checkable

__all__ = ["IsStreamType", "IsStreamT", "DevicePointerType", "DevicePointerT"]


@runtime_checkable
class IsStreamType(Protocol):
    """An object that exposes a stream through the ``__cuda_stream__`` protocol."""

    def __cuda_stream__(self) -> tuple[int, int]:
        """Return ``(version, handle)``; version is 0."""
        ...


#: A device pointer as an int, or None.
DevicePointerType = Optional[int]

# The pre-1.0 spellings are the same objects.
IsStreamT = IsStreamType
DevicePointerT = DevicePointerType
