"""Low-level bindings: everything of nccl.bindings.nccl, plus the two RCCL-only collectives."""

from nccl.bindings.nccl import *  # noqa: F401,F403
from nccl.bindings.nccl import __all__ as _nccl_all
from nccl.bindings.rocm_extensions import all_reduce_with_bias, all_to_all_v  # noqa: F401

__all__ = list(_nccl_all) + ["all_reduce_with_bias", "all_to_all_v"]
