"""Rank-side checks of callbacks into Python during a call (docs/architecture.md#callbacks-into-python):
a callback that empties the container the call walks, or destroys, aborts or closes what the
call uses, ends in a Python exception naming the problem, never in a crash or in a library call
with a destroyed communicator (the host backend's "already destroyed" error would say so).

Each function returns {"failures": [...]}; the communicator is made here (launch(init=False))."""

import gc

import numpy as np

import nccl.bindings.nccl as b
import nccl.bindings.rocm_extensions as rx
import nccl.core as nc
from nccl.core import Communicator, NcclInvalid, UniqueId
from rank_main import Fails
from ranks_core import _rccl_comm

SUM = nc.SUM


def _comm(ctx):
    return Communicator.init(ctx.size, ctx.rank, UniqueId.from_bytes(ctx.uid))


def _in_use(what, call):
    return (f"Cannot {what}: the communicator is in use by {call}(), which is still converting its arguments; "
            f"{what} it after that call returns")


class Clears:
    """An int whose __index__ first empties `items` (the list the call walks) and collects."""

    def __init__(self, items, value):
        self.items, self.value = items, value

    def __index__(self):
        self.items.clear()
        gc.collect()
        return self.value


def wait_signal_list_cleared(ctx):
    """The issue's first crash: a descriptor's property empties the descriptor list."""
    f = Fails(ctx)
    comm = _comm(ctx)
    descs = []

    class Desc:
        @property
        def peer(self):
            descs.clear()
            gc.collect()
            return 0

        op_count, signal_index, context = 1, 0, 0

    descs.extend([Desc()] + [object() for _ in range(1000)])
    f.raises(NcclInvalid, "descs must be WaitSignalDesc objects or a sequence of them, got object", comm.wait_signal,
             descs)
    f.check(descs == [], "the property ran")
    f.check(comm.is_valid, "the communicator is still valid")
    comm.destroy()
    return f.result()


def init_all_devlist_cleared(ctx):
    """The issue's second crash: comm_init_all's devlist emptied by an entry's __index__."""
    f = Fails(ctx)
    devlist = []
    devlist.extend([Clears(devlist, 0)] + [object() for _ in range(1000)])
    f.raises(TypeError, "comm_init_all() argument 'devlist' must be an int, not object", b.comm_init_all, 1001,
             devlist)
    f.check(devlist == [], "the __index__ ran")
    return f.result()


def alltoallv_counts_cleared(ctx):
    """The issue's third and fourth crashes, at 2 ranks: a counts entry's __index__ empties the
    counts list, in Communicator.alltoallv and in rocm_extensions.all_to_all_v; then both calls
    work with honest counts (the walk read an owned snapshot)."""
    f = Fails(ctx)
    comm = _rccl_comm(ctx)  # the host backend as RCCL (NCCL_HOST_FLAVOR=rccl), which has ncclAlltoAllv
    n = ctx.size
    send, recv = np.arange(n, dtype=np.float32) + 10 * ctx.rank, np.zeros(n, np.float32)
    ones, displs = [1] * n, list(range(n))
    counts = []
    counts.extend([Clears(counts, 1)] + [object() for _ in range(n - 1)])
    f.raises(TypeError, "alltoallv() argument 'sendcounts' must be an int, not object", comm.alltoallv, send, recv,
             counts, displs, ones, displs)
    counts = []
    counts.extend([Clears(counts, 1)] + [object() for _ in range(n - 1)])
    f.raises(TypeError, "all_to_all_v() argument 'sendcounts' must be an int, not object", rx.all_to_all_v,
             send.ctypes.data, counts, displs, recv.ctypes.data, ones, displs, b.DataType.Float32, comm.ptr, 0)
    # a list the entry empties, but whose snapshot holds honest counts: a correct result
    counts = []
    counts.extend([Clears(counts, 1)] + [1] * (n - 1))
    comm.alltoallv(send, recv, counts, displs, ones, displs)
    want = np.array([10 * r + ctx.rank for r in range(n)], np.float32)
    f.check(np.array_equal(recv, want), f"alltoallv after the list was emptied: {recv} != {want}")
    comm.destroy()
    return f.result()


def destroy_from_a_callback(ctx):
    """The issue's destroyed-communicator calls: a stream's __cuda_stream__ or an op's __index__
    destroys (or aborts) the communicator while allreduce converts its arguments. The teardown is
    refused, the call raises what the callback raised, and the communicator works on."""
    f = Fails(ctx)
    comm = _comm(ctx)
    x = np.arange(4, dtype=np.float32)

    class Stream:
        def __cuda_stream__(self):
            comm.destroy()
            return (0, 0)

    class Op:
        def __index__(self):
            comm.abort()
            return int(SUM)

    f.raises(NcclInvalid, _in_use("destroy", "allreduce"), comm.allreduce, x, x, SUM, stream=Stream())
    f.raises(NcclInvalid, _in_use("abort", "allreduce"), comm.allreduce, x, x, Op())
    f.check(comm.is_valid, "the communicator is still valid")
    y = np.zeros(4, np.float32)
    comm.allreduce(x, y, SUM)
    f.check(np.array_equal(y, x * ctx.size), f"allreduce after the refusals: {y}")
    comm.destroy()
    f.check(not comm.is_valid, "destroyed once the calls returned")
    return f.result()


def buffers_pinned_during_the_call(ctx):
    """A callback cannot free a buffer the call already resolved: a bytearray cannot be resized
    (its export is held), a cuda.core shim Buffer refuses close(), and a DLPack capsule of a
    temporary keeps its memory until the call returns."""
    f = Fails(ctx)
    comm = _comm(ctx)
    ba = bytearray(range(16))
    buf = nc.mem_alloc(16)
    seen = []

    class Stream:
        def __cuda_stream__(self):
            for close in (ba.clear, buf.close):
                try:
                    close()
                except BufferError as exc:
                    seen.append(str(exc))
            return (0, 0)

    out = np.zeros(16, np.uint8)
    comm.allreduce(ba, out, SUM, stream=Stream())
    f.check(seen[:1] == ["Existing exports of data: object cannot be re-sized"], f"bytearray: {seen}")
    f.check(len(ba) == 16 and np.array_equal(out, np.arange(16, dtype=np.uint8) * ctx.size), f"result {out}")
    comm.allreduce(buf, buf, SUM, stream=Stream())
    f.check(seen[-1:] == ["Buffer.close() was called while a Communicator call on this thread is converting its "
                          "arguments (from one of its callbacks); the call may use this memory: close the Buffer "
                          "after the call returns"], f"Buffer: {seen}")
    f.check(buf.handle != 0, "the Buffer is still open")
    buf.close()

    class Temporary:
        """A producer whose capsule is all that keeps its memory alive."""

        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kw):
            return (np.arange(4, dtype=np.float32) + 1).__dlpack__(**kw)

    out = np.zeros(4, np.float32)
    comm.allreduce(Temporary(), out, SUM)
    f.check(np.array_equal(out, (np.arange(4, dtype=np.float32) + 1) * ctx.size), f"DLPack temporary: {out}")
    comm.destroy()
    return f.result()
