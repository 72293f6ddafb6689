#!/usr/bin/env python3
"""Send/Recv in a ring: rank r sends to r + 1 and receives from r - 1, inside one group.

    python -m nccl.run -n 2 examples/01_basic/02_send_recv.py
    mpirun -n 2 python examples/01_basic/02_send_recv.py      (with mpi4py)

nccl.group() lets every rank post its send and its receive in any order without deadlock: NCCL
starts them together when the group ends. Needs at least 2 ranks. Exits non-zero when a received
value is wrong.
"""

import sys

import numpy as np

import _common
import nccl.core as nccl

COUNT = 1000


def main():
    comm = _common.make_communicator()
    rank, nranks = comm.rank, comm.nranks
    if nranks < 2:
        print("02_send_recv needs at least 2 ranks: python -m nccl.run -n 2 examples/01_basic/02_send_recv.py")
        comm.destroy()
        return 1
    right, left = (rank + 1) % nranks, (rank - 1) % nranks
    if rank == 0:
        print(f"Send/Recv ring over {nranks} ranks")
    ok = True
    for lib in _common.array_libraries(comm):
        send = _common.as_library(lib, np.arange(COUNT, dtype=np.float32) + 1000 * rank)
        recv = lib.zeros(COUNT)

        # [nccl4py] a group: both calls are posted, then run together at the end of the block
        with nccl.group():
            comm.send(send, peer=right, stream=lib.stream)
            comm.recv(recv, peer=left, stream=lib.stream)

        want = np.arange(COUNT, dtype=np.float32) + 1000 * left
        ok &= _common.check(rank, f"recv from rank {left}", lib, recv, want)

        # int64 in the other direction: each rank sends its rank to the left neighbour
        back = lib.full(8, rank, np.int64)
        got = lib.zeros(8, np.int64)
        with nccl.group():
            comm.send(back, left, stream=lib.stream)
            comm.recv(got, right, stream=lib.stream)
        ok &= _common.check(rank, f"int64 recv from rank {right}", lib, got, np.full(8, right, np.int64))
    return _common.finish(comm, ok, "02_send_recv")


if __name__ == "__main__":
    sys.exit(main())
