"""How torch's reductions and tensors map onto NCCL's (docs/api/torch.md#data-types-and-operators).

The fast path hands a contiguous tensor of an NCCL datatype to the library as it is. Everything
else is staged here, the same way on every rank (the choice depends only on the dtype and the
operator, which torch requires to agree across ranks; contiguity may differ, and only changes
whether a copy is made):

* a non-contiguous tensor is copied into a contiguous one, and the result copied back;
* data movement of a dtype NCCL lacks (complex, int16, uint16, float8 variants, ...) moves bytes;
* reductions: bool as uint8 with SUM -> MAX and PRODUCT -> MIN (logical or / and); int16 and
  uint16 through an int32 copy (SUM and PRODUCT wrap to the same 16 bits as torch's own); complex
  SUM and AVG over the real and imaginary parts; BAND, BOR and BXOR on integers and bool by an
  allgather and a local fold; PREMUL_SUM as a multiplication by its factor and a SUM.

``RedOpType`` values are torch's (``hash(ReduceOp)`` is its RedOpType value in torch 2.13, which
tests/torch/test_backend_units.py checks); the NCCL codes are nccl.core.NcclRedOp's.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.distributed import ReduceOp

from nccl.core import NcclRedOp
from nccl.core.interop.torch import _dtype_table

__all__ = ["NCCL_OP", "NATIVE", "SUM", "AVG", "PRODUCT", "MIN", "MAX", "BITWISE", "PREMUL_SUM",
           "op_code", "movable", "reducible", "fold_bitwise", "premul_factor", "Finish"]

_T = ReduceOp.RedOpType
SUM, AVG, PRODUCT, MIN, MAX = int(_T.SUM), int(_T.AVG), int(_T.PRODUCT), int(_T.MIN), int(_T.MAX)
BAND, BOR, BXOR, PREMUL_SUM = int(_T.BAND), int(_T.BOR), int(_T.BXOR), int(_T.PREMUL_SUM)
BITWISE = {BAND: torch.bitwise_and, BOR: torch.bitwise_or, BXOR: torch.bitwise_xor}
_NAMES = {int(v): k for k, v in _T.__members__.items()}

# torch RedOpType value -> NCCL operator, for the operators NCCL has
NCCL_OP = {SUM: int(NcclRedOp.SUM), AVG: int(NcclRedOp.AVG), PRODUCT: int(NcclRedOp.PROD),
           MIN: int(NcclRedOp.MIN), MAX: int(NcclRedOp.MAX)}

# dtypes the library takes as they are (bool is uint8 there: reductions of it are staged)
NATIVE = frozenset(dt for dt in _dtype_table(torch) if dt is not torch.bool)
_WIDENED = frozenset(dt for dt in (torch.int16, getattr(torch, "uint16", None)) if dt is not None)
_BOOL_OP = {SUM: MAX, PRODUCT: MIN, MIN: MIN, MAX: MAX}

Finish = Callable[[], Any]


def op_code(op: Any) -> int:
    """The RedOpType value of a torch ReduceOp (as opts.reduceOp returns it)."""
    return hash(op)


def op_name(code: int) -> str:
    return _NAMES.get(code, str(code))


def premul_factor(op: Any) -> Any:
    """The factor of a PREMUL_SUM ReduceOp: a float or a one-element tensor."""
    return op.factor


def _copy_back(dst: torch.Tensor, src: torch.Tensor) -> Finish:
    return lambda: dst.copy_(src)


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(torch.uint8)


def movable(t: torch.Tensor, written: bool) -> tuple[torch.Tensor, Finish | None]:
    """The buffer that moves ``t``'s data (a contiguous tensor of an NCCL datatype, or its bytes)
    and, when the library writes it (``written``) into a copy, the copy back."""
    c = t if t.is_contiguous() else t.contiguous()
    buf = c if c.dtype in NATIVE or c.dtype is torch.bool else _bytes(c)
    return buf, (_copy_back(t, c) if written and c is not t else None)


def reducible(t: torch.Tensor, code: int, what: str, written: bool) -> tuple[torch.Tensor, int, Finish | None]:
    """(buffer, NCCL operator, copy back or None) that reduce ``t`` with torch operator ``code``;
    the copy back when the library writes the buffer (``written``) and it is a copy. TypeError
    naming the call when torch's dtype has no such reduction."""
    dt = t.dtype
    if dt is torch.bool:
        if code not in _BOOL_OP:
            raise TypeError(f"nccl4py: {what} does not support {op_name(code)} on bool tensors")
        c = t if t.is_contiguous() else t.contiguous()
        return c.view(torch.uint8), NCCL_OP[_BOOL_OP[code]], _back(t, c, written)
    if code not in NCCL_OP:
        raise TypeError(f"nccl4py: {what} does not support {op_name(code)}")
    if dt in _WIDENED:
        wide = t.to(torch.int32)
        return wide, NCCL_OP[code], _copy_back(t, wide) if written else None
    if dt.is_complex:
        if code not in (SUM, AVG):
            raise TypeError(f"nccl4py: {what} does not support {op_name(code)} on complex tensors")
        c = t if t.is_contiguous() else t.contiguous()
        return torch.view_as_real(c), NCCL_OP[code], _back(t, c, written)
    if dt not in NATIVE:
        raise TypeError(f"nccl4py: {what} does not support tensors of {dt}")
    c = t if t.is_contiguous() else t.contiguous()
    return c, NCCL_OP[code], _back(t, c, written)


def _back(t: torch.Tensor, c: torch.Tensor, written: bool) -> Finish | None:
    return _copy_back(t, c) if written and c is not t else None


def fold_bitwise(gathered: torch.Tensor, code: int, what: str) -> torch.Tensor:
    """BAND/BOR/BXOR over dimension 0 of ``gathered`` (one row per rank)."""
    dt = gathered.dtype
    if dt.is_floating_point or dt.is_complex:
        raise TypeError(f"nccl4py: {what} does not support {op_name(code)} on {dt} tensors")
    fn = BITWISE[code]
    out = gathered[0].clone()
    for row in gathered[1:]:
        fn(out, row, out=out)
    return out
