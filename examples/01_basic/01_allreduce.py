#!/usr/bin/env python3
"""AllReduce: every rank contributes rank + 1, every rank receives the sum.

    python -m nccl.run -n 2 examples/01_basic/01_allreduce.py
    mpirun -n 2 python examples/01_basic/01_allreduce.py      (with mpi4py)
    torchrun --nproc-per-node 2 examples/01_basic/01_allreduce.py

On a machine without a GPU it runs on the bundled host backend with NumPy arrays (and torch CPU
tensors when torch is installed); on GPUs with torch CUDA tensors or CuPy arrays. Exits non-zero
when a result is wrong.
"""

import sys

import numpy as np

import _common
import nccl.core as nccl

COUNT = 1 << 12


def main():
    # [nccl4py] one communicator per rank (see _common.make_communicator for the id exchange)
    comm = _common.make_communicator()
    rank, nranks = comm.rank, comm.nranks
    if rank == 0:
        print(f"AllReduce with {nranks} rank(s)")
    ok = True
    for lib in _common.array_libraries(comm):
        send = lib.full(COUNT, rank + 1)
        recv = lib.zeros(COUNT)

        # [nccl4py] out of place: the element count and type come from the buffers
        comm.allreduce(send, recv, nccl.SUM, stream=lib.stream)
        ok &= _common.check(rank, "allreduce SUM", lib, recv, np.full(COUNT, nranks * (nranks + 1) / 2, np.float32))

        # [nccl4py] in place, through reduce() without a root (upstream's spelling of allreduce)
        data = lib.full(COUNT, rank + 1)
        comm.reduce(data, data, nccl.MAX, stream=lib.stream)
        ok &= _common.check(rank, "in-place reduce MAX", lib, data, np.full(COUNT, nranks, np.float32))

        # a slice sends fewer elements: only the first half is reduced
        half = COUNT // 2
        out = lib.zeros(COUNT)
        comm.allreduce(send[:half], out[:half], nccl.SUM, stream=lib.stream)
        want = np.zeros(COUNT, np.float32)
        want[:half] = nranks * (nranks + 1) / 2
        ok &= _common.check(rank, "allreduce of a slice", lib, out, want)
    # [nccl4py] destroy is collective: every rank calls it
    return _common.finish(comm, ok, "01_allreduce")


if __name__ == "__main__":
    sys.exit(main())
