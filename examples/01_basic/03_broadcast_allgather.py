#!/usr/bin/env python3
"""Broadcast from a root, then AllGather of one block per rank.

    python -m nccl.run -n 2 examples/01_basic/03_broadcast_allgather.py
    mpirun -n 2 python examples/01_basic/03_broadcast_allgather.py      (with mpi4py)

Broadcast: the root's buffer reaches every rank (the send buffer is needed only on the root).
AllGather: rank r contributes COUNT elements of value r; everyone receives nranks * COUNT
elements, rank by rank. Exits non-zero when a result is wrong.
"""

import sys

import numpy as np

import _common
import nccl.core as nccl  # noqa: F401 - the API the calls below belong to

COUNT = 512


def main():
    comm = _common.make_communicator()
    rank, nranks = comm.rank, comm.nranks
    root = nranks - 1
    if rank == 0:
        print(f"Broadcast from rank {root} and AllGather over {nranks} rank(s)")
    ok = True
    for lib in _common.array_libraries(comm):
        payload = np.arange(COUNT, dtype=np.float32) * 0.5

        # [nccl4py] out of place: only the root resolves its send buffer
        send = _common.as_library(lib, payload) if rank == root else None
        recv = lib.zeros(COUNT)
        comm.broadcast(send, recv, root=root, stream=lib.stream)
        ok &= _common.check(rank, f"broadcast from {root}", lib, recv, payload)

        # [nccl4py] in place: the same buffer on every rank, filled on the root
        data = _common.as_library(lib, payload + 1) if rank == 0 else lib.zeros(COUNT)
        comm.broadcast(data, data, root=0, stream=lib.stream)
        ok &= _common.check(rank, "in-place broadcast from 0", lib, data, payload + 1)

        # [nccl4py] allgather: the receive buffer holds nranks blocks
        mine = lib.full(COUNT, rank, np.int32)
        everyone = lib.zeros(nranks * COUNT, np.int32)
        comm.allgather(mine, everyone, stream=lib.stream)
        ok &= _common.check(rank, "allgather", lib, everyone, np.repeat(np.arange(nranks, dtype=np.int32), COUNT))
    return _common.finish(comm, ok, "03_broadcast_allgather")


if __name__ == "__main__":
    sys.exit(main())
