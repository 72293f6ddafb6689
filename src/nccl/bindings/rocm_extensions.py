"""RCCL-only collectives: all_reduce_with_bias (ncclAllReduceWithBias) and all_to_all_v
(ncclAlltoAllv, or the deprecated ncclAllToAllv). Counts and displacements are in elements of
the datatype. On a library without them, calling raises FunctionNotFoundError (a
NotImplementedError)."""

from nccl import _ext

# The names come from the extension's RCCL-only method table (src/ext/bindings/rccl.gen.c, generated
# from tools/nccl_surface.py).
__all__ = list(_ext._RCCL_BINDINGS)
globals().update({name: getattr(_ext, name) for name in __all__})
