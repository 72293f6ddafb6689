#!/usr/bin/env python3
"""A non-blocking communicator: creation returns at once, then the program polls until it is ready.

    python -m nccl.run -n 2 examples/01_basic/05_nonblocking_init.py
    mpirun -n 2 python examples/01_basic/05_nonblocking_init.py      (with mpi4py)

With NCCLConfig(blocking=False), init, collectives and finalize may return while the work is
still in progress; comm.get_async_error() reports Result.InProgress until it is done, then
Success (0) or the error. The rank may do other work meanwhile. Exits non-zero when a result is
wrong or the communicator reports an error.
"""

import sys
import time

import numpy as np

import _common
import nccl.core as nccl
from nccl.bindings.nccl import Result

COUNT = 2048
DEADLINE_S = 120.0


def wait_ready(comm, what):
    """Polls until the communicator leaves InProgress; returns the final state."""
    deadline = time.monotonic() + DEADLINE_S
    polls = 0
    while True:
        state = comm.get_async_error()
        if state != Result.InProgress:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} still in progress after {DEADLINE_S} s")
        polls += 1
        time.sleep(0.001)  # other work could run here
    if state != Result.Success:
        print(f"{what} failed: {nccl.get_error_string(state)} ({comm.get_last_error()})")
    return state, polls


def main():
    # [nccl4py] blocking=False: init returns before the communicator is ready
    config = nccl.NCCLConfig(blocking=False)
    comm = _common.make_communicator(config=config)
    state, polls = wait_ready(comm, "init")
    ok = state == Result.Success
    rank, nranks = comm.rank, comm.nranks
    if rank == 0:
        print(f"non-blocking communicator of {nranks} rank(s) ready after {polls} poll(s)")
    for lib in _common.array_libraries(comm):
        send = lib.full(COUNT, 2.0 * (rank + 1))
        recv = lib.zeros(COUNT)
        # [nccl4py] a collective on a non-blocking communicator may also return in progress
        comm.allreduce(send, recv, nccl.SUM, stream=lib.stream)
        state, _ = wait_ready(comm, "allreduce")
        ok &= state == Result.Success
        ok &= _common.check(rank, "allreduce SUM", lib, recv, np.full(COUNT, nranks * (nranks + 1), np.float32))
    # [nccl4py] finalize flushes outstanding work; non-blocking, so poll again before destroy
    comm.finalize()
    state, _ = wait_ready(comm, "finalize")
    ok &= state == Result.Success
    return _common.finish(comm, ok, "05_nonblocking_init")


if __name__ == "__main__":
    sys.exit(main())
