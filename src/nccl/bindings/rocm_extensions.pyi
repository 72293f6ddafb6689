# Stub of nccl.bindings.rocm_extensions (C functions of nccl._ext; docs/compatibility.md#rccl-only-collectives).
# Hand-written head down to the marker line; tools/gen_stubs.py writes the rest from the runtime.
from collections.abc import Sequence

from typing_extensions import Buffer

from nccl.bindings.nccl import _Address, _CommArg

# A host size_t[nranks] array: its address, a sequence of ints, or a 1-D uint64 buffer.
_SizeArray = int | Sequence[int] | Buffer

# ---- Generated below by tools/gen_stubs.py from the runtime: do not edit below this line. ----

def all_reduce_with_bias(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, comm: _CommArg,
                         stream: int, acc: _Address) -> None:
    """ncclAllReduceWithBias (RCCL): an all-reduce that also adds acc, count elements of datatype, into
    the result. Collective; enqueued on stream. FunctionNotFoundError when the library lacks it.
    """
def all_to_all_v(sendbuff: _Address, sendcounts: _SizeArray, sdispls: _SizeArray, recvbuff: _Address,
                 recvcounts: _SizeArray, rdispls: _SizeArray, datatype: int, comm: _CommArg, stream: int) -> None:
    """ncclAlltoAllv (RCCL; falls back to the deprecated ncclAllToAllv): rank j receives sendcounts[j]
    elements from sendbuff + sdispls[j]; data from rank i lands at recvbuff + rdispls[i]. Counts and
    displacements are in elements of datatype, not bytes. The four arrays are host size_t[nranks]
    addresses, sequences of ints, or 1-D uint64 buffers (copied after checking their length).
    """

__all__ = ["all_reduce_with_bias", "all_to_all_v"]
