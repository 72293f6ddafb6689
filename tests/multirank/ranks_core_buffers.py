"""Every nccl.core collective and p2p method on every kind of host buffer the host backend
accepts: numpy arrays, torch CPU tensors, bytearray/memoryview (cast to float32) and a ctypes
DLPack producer (tests/core/_buffer_probe.py) - results against numpy references - and reference
counts unchanged over loops of every method."""

import ctypes
import sys
from pathlib import Path

import numpy as np

import nccl.core as nc
from nccl.core import Communicator, UniqueId

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from _buffer_probe import Producer  # noqa: E402  (the DLPack producer of the buffer tests)

N = 6  # elements per rank


class Kind:
    """Makes float32 buffers of one kind and reads them back as numpy arrays."""

    def __init__(self, name):
        self.name = name
        self.keep = []

    def make(self, values):
        values = np.ascontiguousarray(values, np.float32)
        if self.name == "numpy":
            return values.copy()
        if self.name == "torch":
            import torch

            return torch.from_numpy(values.copy())
        if self.name == "memoryview":
            raw = bytearray(values.tobytes())
            self.keep.append(raw)
            return memoryview(raw).cast("f")
        if self.name == "dlpack":
            p = Producer((len(values),), code=2, bits=32)  # kDLFloat, 32 bits, kDLCPU
            ctypes.memmove(p.ptr, values.ctypes.data, values.nbytes)
            return p
        raise AssertionError(self.name)

    def read(self, buf):
        if self.name == "numpy":
            return buf.copy()
        if self.name == "torch":
            return buf.numpy().copy()
        if self.name == "memoryview":
            return np.frombuffer(buf, np.float32).copy()
        return np.frombuffer((ctypes.c_float * (len(buf.mem) // 4)).from_address(buf.ptr), np.float32).copy()


def inputs(rank, n=N):
    return (np.arange(n, dtype=np.float32) + 10 * rank + 1)


def every_method(ctx):
    n, r = ctx.size, ctx.rank
    failures = []
    comm = Communicator.init(nranks=n, rank=r, unique_id=UniqueId.from_bytes(ctx.uid))
    kinds = ["numpy", "memoryview", "dlpack"]
    try:
        import torch  # noqa: F401

        kinds.append("torch")
    except ImportError:
        pass
    everyone = [inputs(q) for q in range(n)]
    for name in kinds:
        k = Kind(name)

        def same(what, got, want):
            if not np.array_equal(got, np.asarray(want, np.float32)):
                failures.append(f"rank {r}/{n} {name} {what}: got {got} want {want}")

        x, y = k.make(everyone[r]), k.make(np.zeros(N))
        comm.allreduce(x, y, nc.SUM)
        same("allreduce", k.read(y), sum(everyone))
        comm.allreduce(x, x, nc.MAX)  # in place
        same("allreduce in place", k.read(x), np.max(everyone, axis=0))
        x, y = k.make(everyone[r]), k.make(np.zeros(N))
        comm.reduce(x, y if r == 0 else None, nc.MIN, root=0)
        if r == 0:
            same("reduce", k.read(y), np.min(everyone, axis=0))
        b = k.make(everyone[r])
        comm.broadcast(b if r == n - 1 else None, b, root=n - 1)
        same("broadcast", k.read(b), everyone[n - 1])
        g = k.make(np.zeros(N * n))
        comm.allgather(k.make(everyone[r]), g)
        same("allgather", k.read(g), np.concatenate(everyone))
        g = k.make(np.zeros(N * n))
        comm.gather(k.make(everyone[r]), g if r == 0 else None, root=0)
        if r == 0:
            same("gather", k.read(g), np.concatenate(everyone))
        big = [inputs(q, N * n) for q in range(n)]
        rs = k.make(np.zeros(N))
        comm.reduce_scatter(k.make(big[r]), rs, nc.SUM)
        same("reduce_scatter", k.read(rs), sum(big)[r * N:(r + 1) * N])
        a2a = k.make(np.zeros(N * n))
        comm.alltoall(k.make(big[r]), a2a)
        same("alltoall", k.read(a2a), np.concatenate([big[q][r * N:(r + 1) * N] for q in range(n)]))
        sc = k.make(np.zeros(N))
        comm.scatter(k.make(big[0]) if r == 0 else None, sc, root=0)
        same("scatter", k.read(sc), big[0][r * N:(r + 1) * N])
        got, out = k.make(np.zeros(N)), k.make(everyone[r])  # alive until the group ends
        with nc.group():
            comm.send(out, (r + 1) % n)
            comm.recv(got, (r - 1) % n)
        same("send/recv ring", k.read(got), everyone[(r - 1) % n])
    comm.destroy()
    return {"failures": failures, "kinds": kinds}


def refcounts_every_method(ctx):
    """Reference counts of the buffers (numpy and, when present, torch) and the communicator are
    unchanged after 2000 calls of every method."""
    n, r = ctx.size, ctx.rank
    failures = []
    comm = Communicator.init(nranks=n, rank=r, unique_id=UniqueId.from_bytes(ctx.uid))
    makers = [("numpy", lambda m: np.zeros(m, np.float32))]
    try:
        import torch

        makers.append(("torch", lambda m: torch.zeros(m, dtype=torch.float32)))
    except ImportError:
        pass
    for name, make in makers:
        x, y, big, big2 = make(N), make(N), make(N * n), make(N * n)
        calls = {
            "allreduce": lambda: comm.allreduce(x, y, nc.SUM),
            "reduce": lambda: comm.reduce(x, y, nc.SUM, root=0),
            "broadcast": lambda: comm.broadcast(x, x, root=0),
            "allgather": lambda: comm.allgather(x, big),
            "gather": lambda: comm.gather(x, big, root=0),
            "reduce_scatter": lambda: comm.reduce_scatter(big, y, nc.SUM),
            "alltoall": lambda: comm.alltoall(big, big2),
            "scatter": lambda: comm.scatter(big, y, root=0),
            "send/recv": lambda: (nc.group_start(), comm.send(x, (r + 1) % n), comm.recv(y, (r - 1) % n),
                                  nc.group_end()),
        }
        for what, call in calls.items():
            before = (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(big), sys.getrefcount(comm))
            for _ in range(2000):
                call()
            after = (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(big), sys.getrefcount(comm))
            if before != after:
                failures.append(f"rank {r} {name} {what}: refcounts {before} -> {after}")
    comm.destroy()
    return {"failures": failures}
