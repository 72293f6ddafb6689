"""The parts of nccl._ext's C types that compose and configure rather than carry a call's cost or
safety, written here over the bindings; nccl.core's import hands them to the C types
(nccl._ext._register), so C never looks Python up by name.

Also the helpers the C code calls: ``ml_dtype``.
"""

from __future__ import annotations

from typing import Any


def ml_dtype(name: str) -> Any:
    """The ml_dtypes type of that name (bfloat16, float8_e4m3fn, float8_e5m2), importing the optional
    ml_dtypes package on first use; ImportError when it is not installed (Communicator.create_pre_mul_sum
    turns that into NcclInvalid)."""
    import ml_dtypes

    return getattr(ml_dtypes, name)
