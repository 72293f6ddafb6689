"""CuPy helpers: ``empty`` (arrays backed by ncclMemAlloc) and ``resolve_array``.

CuPy is imported by the first call, not by importing this module.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Literal

import numpy as _np

from nccl._errors import NcclInvalid
from nccl.core._types import NcclDataType

if TYPE_CHECKING:
    import cupy
    from numpy.typing import DTypeLike

__all__ = ["empty", "resolve_array"]


def _cupy() -> ModuleType:
    try:
        import cupy
    except ImportError:
        raise ModuleNotFoundError("CuPy is not installed") from None
    return cupy


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(n) for n in shape)
    return (operator.index(shape),)


def empty(shape: int | Sequence[int], dtype: DTypeLike = float, order: Literal["C", "F"] = "C") -> cupy.ndarray:
    """An uninitialised CuPy array on the current device, in memory from nccl.core.mem_alloc."""
    if order not in ("C", "F"):
        raise NcclInvalid(f"Invalid memory order: must be 'C' or 'F', got '{order}'. "
                          "NCCL arrays support row-major (C) and column-major (F) layouts only.")
    try:
        np_dtype = _np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise NcclInvalid(f"Invalid data type: could not convert {dtype!r} to a numpy dtype: {exc}") from None
    shape = _shape(shape)
    cupy = _cupy()
    from nccl.core.memory import mem_alloc

    count = math.prod(shape)
    buf = mem_alloc(max(count * np_dtype.itemsize, 1))
    flat = cupy.from_dlpack(buf)  # 1-D int8 over the whole allocation, keeping buf alive
    return flat[: count * np_dtype.itemsize].view(np_dtype).reshape(shape, order=order)


def resolve_array(array: cupy.ndarray) -> tuple[int, int, NcclDataType, int]:
    """``(ptr, count, dtype, device_id)`` of a CuPy array; numpy bool maps to UINT8."""
    cupy = _cupy()
    if not isinstance(array, cupy.ndarray):
        raise NcclInvalid(f"array must be a CuPy array, got {type(array).__name__}")
    return (int(array.data.ptr), int(array.size), NcclDataType.from_numpy_dtype(array.dtype),
            int(array.device.id))
