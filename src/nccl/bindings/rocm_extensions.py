"""RCCL-only collectives: all_reduce_with_bias (ncclAllReduceWithBias) and all_to_all_v
(ncclAlltoAllv, or the deprecated ncclAllToAllv). Counts and displacements are in elements of
the datatype. On a library without them, calling raises FunctionNotFoundError (a
NotImplementedError)."""

from nccl._ext import all_reduce_with_bias, all_to_all_v

__all__ = ["all_reduce_with_bias", "all_to_all_v"]
