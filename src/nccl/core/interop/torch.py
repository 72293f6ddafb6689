"""PyTorch helpers: ``empty`` (tensors backed by ncclMemAlloc) and ``resolve_tensor``.

PyTorch is imported by the first call, not by importing this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Literal

from nccl._errors import NcclInvalid
from nccl.core._types import NcclDataType

if TYPE_CHECKING:
    import torch

__all__ = ["empty", "resolve_tensor"]


def _torch() -> ModuleType:
    try:
        import torch
    except ImportError:
        raise ModuleNotFoundError("PyTorch is not installed") from None
    return torch


def _dtype_table(torch: ModuleType) -> dict[torch.dtype, NcclDataType]:
    table = {
        torch.float16: NcclDataType.FLOAT16, torch.float32: NcclDataType.FLOAT32,
        torch.float64: NcclDataType.FLOAT64, torch.bfloat16: NcclDataType.BFLOAT16,
        torch.int8: NcclDataType.INT8, torch.int32: NcclDataType.INT32, torch.int64: NcclDataType.INT64,
        torch.uint8: NcclDataType.UINT8, torch.bool: NcclDataType.UINT8,
    }
    for name, member in (("float8_e4m3fn", NcclDataType.FLOAT8E4M3), ("float8_e5m2", NcclDataType.FLOAT8E5M2),
                         ("uint32", NcclDataType.UINT32), ("uint64", NcclDataType.UINT64)):
        dt = getattr(torch, name, None)  # torch >= 2.1 (fp8), >= 2.3 (uint32/64)
        if dt is not None:
            table[dt] = member
    return table


def _nccl_dtype(torch: ModuleType, dtype: torch.dtype) -> NcclDataType:
    member = _dtype_table(torch).get(dtype)
    if member is None:
        raise NcclInvalid(f"Unsupported torch dtype {dtype} has no NCCL equivalent. "
                          "NCCL does not support complex, int16, or quantized types.")
    return member


def _size(size: tuple[int | Sequence[int], ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(n) for n in size)


def empty(*size: int | Sequence[int], dtype: torch.dtype | None = None, device: torch.device | str | int | None = None,
          morder: Literal["C", "F"] = "C") -> torch.Tensor:
    """An uninitialised tensor in memory from nccl.core.mem_alloc, on a CUDA (or HIP) device."""
    torch = _torch()
    if morder not in ("C", "F"):
        raise NcclInvalid(f"Invalid memory order: must be 'C' or 'F', got '{morder}'")
    shape = _size(size)
    if dtype is None:
        dtype = torch.get_default_dtype()
    if device is None:
        target = torch.device("cuda", torch.cuda.current_device())
    elif isinstance(device, int) and not isinstance(device, bool):
        target = torch.device("cuda", device)
    else:
        target = torch.device(device)
    if target.type != "cuda":
        raise NcclInvalid(f"NCCL tensors must be on CUDA device, got {target}")
    index = target.index if target.index is not None else torch.cuda.current_device()
    _nccl_dtype(torch, dtype)
    from nccl.core.memory import mem_alloc

    itemsize = torch.empty((), dtype=dtype).element_size()
    count = math.prod(shape)
    buf = mem_alloc(max(count * itemsize, 1), device=index)
    flat = torch.from_dlpack(buf)[: count * itemsize].view(dtype)
    if morder == "C":
        return flat.view(shape)
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return flat.as_strided(shape, tuple(strides))


def resolve_tensor(tensor: torch.Tensor) -> tuple[int, int, NcclDataType, int | None]:
    """``(data_ptr, numel, dtype, device.index)`` of a tensor."""
    torch = _torch()
    if not isinstance(tensor, torch.Tensor):
        raise NcclInvalid(f"tensor must be a PyTorch tensor, got {type(tensor).__name__}")
    return (int(tensor.data_ptr()), int(tensor.numel()), _nccl_dtype(torch, tensor.dtype), tensor.device.index)
