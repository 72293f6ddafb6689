"""A training-like loop with one fault planted, run under python -m nccl.run by test_verdict.py:

    python faults.py FAULT

Each rank does ITERS steps of "allreduce the gradients, broadcast the parameters from rank 0";
at step FAULT_STEP one rank goes wrong as FAULT says. A line marked ``# site: NAME`` is where the
verdict must point; the test finds the line number from the mark."""

import os
import signal
import sys
import time

import numpy as np

import nccl.core as nc

ITERS, FAULT_STEP = 12, 5
fault = sys.argv[1]
comm = nc.Communicator.from_env()
me, n = comm.rank, comm.nranks
grads = np.ones(256, dtype=np.float32)
params = np.zeros(256, dtype=np.float32)
wide = np.ones(256, dtype=np.float64)


def step(i, c):
    bad = i == FAULT_STEP
    if fault == "skip" and bad and me == 2:
        pass  # rank 2 forgets the allreduce of this step
    elif fault == "count" and bad and me == 1:
        c.allreduce(grads[:255], grads[:255], nc.SUM)  # site: count-bad
    elif fault == "dtype" and bad and me == 2:
        c.allreduce(wide, wide, nc.SUM)  # site: dtype-bad
    else:
        c.allreduce(grads, grads, nc.SUM)  # site: allreduce
    if fault == "root" and bad and me == 0:
        c.broadcast(params, params, 1)  # site: root-bad
    else:
        c.broadcast(params, params, 0)  # site: broadcast
    if fault == "kill" and bad and me == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == "sleep" and bad and me == 1:
        # stuck in Python: the launcher's SIGUSR1 still gets a dump, and the Python stack
        time.sleep(600)  # site: sleep
    if fault == "group" and bad:
        with nc.group():
            c.allreduce(grads[: 128 if me == 2 else 64], grads[:64] if me != 2 else grads[:128], nc.SUM)  # site: group
            c.allreduce(params, params, nc.MAX)
    if fault == "p2p" and bad:
        with nc.group():
            c.send(grads[: 32 if me == 0 else 16], (me + 1) % n)  # site: send
            c.recv(params[:16], (me - 1) % n)  # site: recv


if fault == "split":
    sub = comm.split(0 if me < 3 else 1, me)  # ranks 0-2 together, rank 3 alone
    for i in range(ITERS):
        if i == FAULT_STEP and me == 1:
            sub.allreduce(grads[:128], grads[:128], nc.SUM)  # site: split-bad
        else:
            sub.allreduce(grads, grads, nc.SUM)  # site: split-allreduce
    sub.destroy()
else:
    for i in range(ITERS):
        step(i, comm)  # site: loop
comm.destroy()
