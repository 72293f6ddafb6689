"""Rank-side code of the flight recorder's multi-rank tests (test_recorder.py), run by the
multi-rank launcher (tests/multirank/harness.py) on the host backend.

Each function makes its calls, noting the source line of each one (``L[name] = here()`` on the
line of the call itself), dumps with nccl.core.dump_trace(), and returns the lines it noted and the
file's path; the test reads the file and checks every field against what the rank did.
"""

import os
import shutil
import signal
import sys
import threading
import time

import numpy as np

import nccl.bindings.nccl as b
import nccl.core as nc

F32 = b.DataType.Float32


def here():
    """The line of the caller (the line a recorded call on the same line was made from)."""
    return sys._getframe(1).f_lineno


def core_comm(ctx, **kw):
    return nc.Communicator.init(ctx.size, ctx.rank, nc.UniqueId.from_bytes(ctx.uid), **kw)


def every_kind(ctx):
    """One call of each kind through nccl.core, a group, a split and the bindings on their own
    communicator; dumps before destroying (so the communicators are live in the file)."""
    me, n, L, buffers = ctx.rank, ctx.size, {}, {}
    comm = core_comm(ctx)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, dtype=np.float32)
    big = np.zeros(8 * n, dtype=np.float32)
    buffers.update(x=x.ctypes.data, y=y.ctypes.data, big=big.ctypes.data)
    comm.allreduce(x, y, nc.SUM); L["AllReduce"] = here()  # noqa: E702
    comm.broadcast(x, y, 1); L["Broadcast"] = here()  # noqa: E702
    comm.reduce(x, y, nc.MAX, 0); L["Reduce"] = here()  # noqa: E702
    comm.allgather(x, big); L["AllGather"] = here()  # noqa: E702
    comm.reduce_scatter(big, y, nc.PROD); L["ReduceScatter"] = here()  # noqa: E702
    comm.alltoall(big, big.copy()); L["AlltoAll"] = here()  # noqa: E702
    comm.gather(x, big, 1); L["Gather"] = here()  # noqa: E702
    comm.scatter(big, y, 0); L["Scatter"] = here()  # noqa: E702
    with nc.group():  # GroupEnd is attributed to this line, the one of the with statement
        L["GroupEnd"] = here() - 1
        comm.send(x, (me + 1) % n); L["Send"] = here()  # noqa: E702
        comm.recv(y, (me - 1) % n); L["Recv"] = here()  # noqa: E702
    sub = comm.split(me % 2, me); L["Split"] = here()  # noqa: E702
    sub.allreduce(x, x, nc.AVG); L["SubAllReduce"] = here()  # noqa: E702
    b.all_reduce(x.ctypes.data, y.ctypes.data, 8, F32, b.RedOp.Min, comm.ptr, 0); L["Binding"] = here()  # noqa: E702
    path = nc.dump_trace()
    sub.destroy()
    comm.destroy()
    return {"lines": L, "buffers": buffers, "path": path, "file": __file__, "pid": os.getpid()}


def bindings_comm(ctx):
    """A communicator made by the bindings (ctx.comm, through comm_init_rank): bindings calls and a
    Communicator wrapping the handle record on its ring."""
    L = {}
    x = np.ones(4, dtype=np.float32)
    b.all_reduce(x.ctypes.data, x.ctypes.data, 4, F32, b.RedOp.Sum, ctx.comm, 0); L["Binding"] = here()  # noqa: E702
    wrapped = nc.Communicator(ctx.comm)
    wrapped.allreduce(x, x, nc.SUM); L["Wrapped"] = here()  # noqa: E702
    b.group_start()
    b.send(x.ctypes.data, 4, F32, (ctx.rank + 1) % ctx.size, ctx.comm, 0); L["Send"] = here()  # noqa: E702
    y = np.zeros(4, dtype=np.float32)
    b.recv(y.ctypes.data, 4, F32, (ctx.rank - 1) % ctx.size, ctx.comm, 0); L["Recv"] = here()  # noqa: E702
    b.group_end(); L["GroupEnd"] = here()  # noqa: E702
    return {"lines": L, "path": nc.dump_trace(), "file": __file__}


def windows(ctx):
    """Window registration, put_signal, signal and wait_signal through nccl.core."""
    me, n, L = ctx.rank, ctx.size, {}
    comm = core_comm(ctx)
    buf = nc.mem_alloc(n * 8 * 4)
    arr = np.from_dlpack(buf).view(np.float32)
    win_ptr = int(buf.handle)
    win = comm.register_window(buf); L["WindowRegister"] = here()  # noqa: E702
    src = np.full(8, float(me), dtype=np.float32)
    comm.put_signal(src, (me + 1) % n, win, me * 8); L["PutSignal"] = here()  # noqa: E702
    comm.wait_signal(nc.WaitSignalDesc((me - 1) % n)); L["WaitSignal"] = here()  # noqa: E702
    comm.signal((me + 1) % n); L["Signal"] = here()  # noqa: E702
    comm.wait_signal([nc.WaitSignalDesc((me - 1) % n)])
    comm.allreduce(np.zeros(1), np.zeros(1), nc.SUM)
    win.close(); L["WindowDeregister"] = here()  # noqa: E702
    path = shutil.copy(nc.dump_trace(), f"{ctx.params}/before{me}.jsonl")  # each dump replaces the file
    comm.destroy(); L["Destroy"] = here()  # noqa: E702
    after = nc.dump_trace()
    del arr
    nc.mem_free(buf)
    return {"lines": L, "path": path, "after": after, "file": __file__, "win_ptr": win_ptr}


def signal_while_stuck(ctx):
    """Rank 0 enters an allreduce that rank 1 joins 2 s later; meanwhile a thread of rank 0 sends
    SIGUSR1 to its own process. The file written then shows the allreduce entered, not returned."""
    comm = core_comm(ctx)
    x = np.ones(4, dtype=np.float32)
    L = {}
    if ctx.rank == 0:
        kick = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGUSR1))
        kick.start()
        comm.allreduce(x, x, nc.SUM); L["AllReduce"] = here()  # noqa: E702
        kick.join()
    else:
        time.sleep(2.0)
        comm.allreduce(x, x, nc.SUM)
    comm.destroy()
    return {"lines": L, "file": __file__}
