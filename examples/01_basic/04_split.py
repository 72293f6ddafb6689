#!/usr/bin/env python3
"""Split: even and odd ranks form two communicators, each reducing on its own.

    python -m nccl.run -n 4 examples/01_basic/04_split.py
    mpirun -n 4 python examples/01_basic/04_split.py      (with mpi4py)

comm.split(color, key) is collective over the parent; ranks with the same color end up in one
child, ordered by key. Here color = rank % 2 and key = -rank (reversed order). With color=None a
rank takes part in the split but gets no communicator. Exits non-zero when a result is wrong.
"""

import sys

import numpy as np

import _common
import nccl.core as nccl

COUNT = 256


def main():
    comm = _common.make_communicator()
    rank, nranks = comm.rank, comm.nranks
    if rank == 0:
        print(f"Split of {nranks} rank(s) into even and odd")
    ok = True
    color = rank % 2
    members = [r for r in range(nranks) if r % 2 == color]

    # [nccl4py] split: collective over the parent; key orders the ranks of a child
    child = comm.split(color=color, key=-rank)
    want_rank = sorted(members, reverse=True).index(rank)
    if (child.nranks, child.rank) != (len(members), want_rank):
        print(f"rank {rank}: child is rank {child.rank}/{child.nranks}, want {want_rank}/{len(members)}")
        ok = False
    for lib in _common.array_libraries(comm):
        send = lib.full(COUNT, rank)
        recv = lib.zeros(COUNT)
        child.allreduce(send, recv, nccl.SUM, stream=lib.stream)
        ok &= _common.check(rank, f"allreduce in the color-{color} child", lib, recv,
                            np.full(COUNT, sum(members), np.float32))
        # the parent still works beside its child
        comm.allreduce(send, recv, nccl.SUM, stream=lib.stream)
        ok &= _common.check(rank, "allreduce in the parent", lib, recv,
                            np.full(COUNT, nranks * (nranks - 1) / 2, np.float32))

    # [nccl4py] color=None: this rank joins the collective split call and gets a null communicator
    lonely = comm.split(color=None if rank != 0 else 0, key=0)
    if rank == 0:
        ok &= lonely.is_valid and lonely.nranks == 1
    else:
        ok &= not lonely.is_valid
    if lonely.is_valid:
        lonely.destroy()
    child.destroy()
    return _common.finish(comm, ok, "04_split")


if __name__ == "__main__":
    sys.exit(main())
