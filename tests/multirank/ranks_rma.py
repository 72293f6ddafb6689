"""Rank-side checks of windows and one-sided operations on the host backend (src/host/window.c,
src/host/rma.c; docs/host-backend.md#windows-and-one-sided-operations), through nccl.core and the
bindings, against numpy. A check returns {"failures": [...]}; test_rma.py asserts it is empty."""

import ctypes
import os
import signal
import threading
import time

import numpy as np

import nccl._ext as E
import nccl.bindings.nccl as b
import nccl.core as core
from nccl.core import WaitSignalDesc

F64 = int(b.DataType.Float64)
_KEEP = []  # windows left open on purpose (their communicator failed): never closed by the collector


class Checker:
    def __init__(self, ctx):
        self.ctx, self.rank, self.size = ctx, ctx.rank, ctx.size
        self.comm = E.Communicator(ctx.comm)
        self.failures = []

    def fail(self, what):
        self.failures.append(f"rank {self.rank}/{self.size}: {what}")

    def equal(self, what, got, want):
        if not np.array_equal(got, want):
            self.fail(f"{what}: got {got!r}, want {want!r}")

    def raises(self, what, exc, text, fn, *args):
        try:
            fn(*args)
        except exc as e:
            if text not in str(e):
                self.fail(f"{what}: {type(e).__name__} without {text!r}: {e}")
            return e
        except Exception as e:  # noqa: BLE001 - reported as a failure
            self.fail(f"{what}: {type(e).__name__} instead of {exc.__name__}: {e}")
            return None
        self.fail(f"{what}: no error")
        return None

    def result(self):
        return {"failures": self.failures}


def alloc(nbytes, dtype=np.float64):
    """A numpy view of nccl.core.mem_alloc memory (ncclMemAlloc: peers can map it)."""
    buf = core.mem_alloc(nbytes)
    arr = np.from_dlpack(buf).view(dtype)
    return buf, arr


def peer_view(win, peer, count, dtype=np.float64, offset=0):
    """numpy view of rank `peer`'s part of the window, through ncclGetPeerDevicePointer."""
    ptr = b.get_peer_device_pointer(win.handle, offset, peer)
    if ptr == 0:
        return None
    n = count * np.dtype(dtype).itemsize
    return np.frombuffer((ctypes.c_char * n).from_address(ptr), dtype=dtype)


def puts_then_wait(ctx):
    """Every rank puts a distinct block into every peer's window (its own slot), then one wait
    for one signal from each peer; every slot then holds its writer's data. Then many puts into
    one peer and one wait counting them all. Then peer pointers (load/store) and user pointers."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    if c.host_rma_support is not True:
        k.fail(f"host_rma_support is {c.host_rma_support!r}")
    count = 5
    buf, win_arr = alloc(n * count * 8)
    win_arr[:] = -1
    win = c.register_window(buf)
    src = np.arange(count, dtype=np.float64) + 100 * me
    for p in range(n):
        c.put_signal(src, p, win, me * count)  # offset in elements of src's dtype
    c.wait_signal([WaitSignalDesc(p) for p in range(n)])
    want = np.concatenate([np.arange(count, dtype=np.float64) + 100 * r for r in range(n)])
    k.equal("slots after one put per rank", win_arr, want)
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)  # everyone has read before the next round
    # many puts towards rank 0 through the bindings, then one wait with one descriptor per sender
    many = 8
    if me != 0:
        for i in range(many):
            v = np.full(1, 1000.0 * me + i)
            b.put_signal(v.ctypes.data, 1, F64, 0, win.handle, ((me * count + i % count) * 8), 0, 0, 0, ctx.comm, 0)
    else:
        descs = [WaitSignalDesc(p, op_count=many) for p in range(1, n)]
        c.wait_signal(descs)
        for r in range(1, n):
            got = win_arr[r * count:(r + 1) * count]
            exp = np.array([1000.0 * r + max(i for i in range(many) if i % count == j) for j in range(count)])
            k.equal(f"rank {r}'s slot after {many} puts", got, exp)
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    # load/store through the peers' mapped windows
    for p in range(n):
        v = peer_view(win, p, n * count)
        if v is None:
            k.fail(f"no peer pointer for rank {p}")
            continue
        if p == me:
            if b.get_peer_device_pointer(win.handle, 0, p) != win_arr.ctypes.data:
                k.fail("own peer pointer is not the user buffer")
        v[me] = 7000.0 + me  # store into each peer's window, element `me`
    lsa = b.get_lsa_device_pointer(win.handle, 8, (me + 1) % n)
    if lsa != b.get_peer_device_pointer(win.handle, 8, (me + 1) % n):
        k.fail("LSA pointer differs from the peer pointer")
    if b.win_get_user_ptr(ctx.comm, win.handle) != win_arr.ctypes.data:
        k.fail("win_get_user_ptr is not the registered buffer")
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    k.equal("stores from every peer", win_arr[:n], 7000.0 + np.arange(n))
    win.close()
    core.mem_free(buf)
    return k.result()


def ping_pong(ctx):
    """Signal-only ping-pong between ranks 0 and 1 (the others signal rank 0 once), 50 rounds,
    each wait consuming exactly one signal; inside and outside groups."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    rounds = 50
    for i in range(rounds):
        if me == 0:
            c.signal(1)
            c.wait_signal(WaitSignalDesc(1))
        elif me == 1:
            c.wait_signal(WaitSignalDesc(0))
            with core.group():
                c.signal(0)
    if me >= 2:
        b.signal(0, 0, 0, 0, ctx.comm, 0)
    elif me == 0 and n > 2:
        c.wait_signal([WaitSignalDesc(p) for p in range(2, n)])
    # a wait for zero signals returns at once
    c.wait_signal([WaitSignalDesc((me + 1) % n, op_count=0)])
    c.wait_signal([])
    return k.result()


def group_windows(ctx):
    """Windows registered inside a group (two of them): the handles are filled at group end; a
    put/wait round through each; deregistration inside a group."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    b1, a1 = alloc(4096)
    b2, a2 = alloc(8192, np.int32)
    a1[:] = 0
    a2[:] = 0
    with core.group():
        w1 = c.register_window(b1)
        w2 = c.register_window(b2)
        if w1.handle != 0 or w2.handle != 0:
            k.fail("a window handle was set before the group ended")
    if w1.handle == 0 or w2.handle == 0 or w1.handle == w2.handle:
        k.fail(f"handles after the group: {w1.handle:#x}, {w2.handle:#x}")
    # raw bindings inside a group: the handle is written at group end
    box = b.PointerBox()
    b3, a3 = alloc(4096)
    b.group_start()
    b.comm_window_register(ctx.comm, a3.ctypes.data, 4096, box.address, 1)
    inside = box.ptr
    b.group_end()
    if inside != 0 or box.ptr == 0:
        k.fail(f"bindings: handle {inside:#x} inside, {box.ptr:#x} after the group")
    nxt = (me + 1) % n
    with core.group():
        c.put_signal(np.full(3, me + 1.0), nxt, w1, 0)
        c.put_signal(np.full(4, me + 10, np.int32), nxt, w2, 4)
    prev = (me - 1) % n
    c.wait_signal(WaitSignalDesc(prev, op_count=2))
    k.equal("window 1", a1[:4], [prev + 1.0] * 3 + [0.0])
    k.equal("window 2", a2[:9], [0] * 4 + [prev + 10] * 4 + [0])
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    with core.group():
        w1.close()
        w2.close()
    b.comm_window_deregister(ctx.comm, box.ptr)
    # a registration and a collective on the same buffer in one group (the registration runs first)
    b4, a4 = alloc(64)
    a4[:] = me + 1
    with core.group():
        w4 = c.register_window(b4)
        c.allreduce(a4, a4, b.RedOp.Sum)
    k.equal("allreduce grouped with the registration", a4, np.full(8, n * (n + 1) / 2))
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)  # every rank's allreduce wrote its output
    c.put_signal(np.full(1, -1.0), nxt, w4, 7)
    c.wait_signal(WaitSignalDesc(prev))
    k.equal("put into the window registered with the allreduce", a4[7], -1.0)
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    w4.close()
    for bb in (b1, b2, b3, b4):
        core.mem_free(bb)
    return k.result()


def foreign_memory(ctx):
    """A window over numpy memory (not mem_alloc): registration works, collectives on the buffer
    work (vLLM's pattern: register a window on the tensor, then allreduce on it); peers have no
    pointer to it, and a put into it is ncclInvalidUsage naming the rank; a signal still works."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    x = np.arange(64, dtype=np.float32) * (me + 1)
    w = c.register_window(x)
    if w.handle == 0:
        k.fail("no handle for a window over numpy memory")
    c.allreduce(x, x, b.RedOp.Sum)
    k.equal("allreduce in place on the window's buffer", x, np.arange(64, dtype=np.float32) * (n * (n + 1) // 2))
    # the bindings' raw-pointer form, as vLLM calls it
    y = np.ones(32, dtype=np.float32)
    box = b.PointerBox()
    b.comm_window_register(ctx.comm, y.ctypes.data, y.nbytes, box.address, 1)
    c.allreduce(y, y, b.RedOp.Sum)
    k.equal("allreduce on the raw-registered buffer", y, np.full(32, n, np.float32))
    b.comm_window_deregister(ctx.comm, box.ptr)
    peer = (me + 1) % n
    if n > 1:
        if b.get_peer_device_pointer(w.handle, 0, peer) != 0:
            k.fail("a peer pointer into non-mem_alloc memory")
        k.raises("put into a non-mem_alloc window", b.NCCLInvalidUsage, f"rank {peer}'s part of the window is not "
                 "ncclMemAlloc memory", c.put_signal, np.ones(1, np.float32), peer, w, 0)
    if b.get_peer_device_pointer(w.handle, 4, me) != x.ctypes.data + 4:
        k.fail("own pointer into a numpy window")
    c.signal(peer)
    c.wait_signal(WaitSignalDesc((me - 1) % n))
    w.close()
    return k.result()


def bad_input(ctx):
    """Every bad input: a clear error naming the argument, and the communicator stays usable."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    buf, arr = alloc(4096)
    arr[:] = 0
    win = c.register_window(buf)
    peer = (me + 1) % n
    one = np.ones(1)
    IA, IU = b.NCCLInvalidArgument, b.NCCLInvalidUsage
    put = b.put_signal
    comm = ctx.comm
    k.raises("offset beyond", IA, "peerWinOffset 4096 + 8 bytes is beyond the 4096 bytes", put, one.ctypes.data, 1,
             F64, peer, win.handle, 4096, 0, 0, 0, comm, 0)
    k.raises("bytes beyond", IA, "peerWinOffset 8 + 4096 bytes is beyond", put, arr.ctypes.data, 512, F64, peer,
             win.handle, 8, 0, 0, 0, comm, 0)
    k.raises("overflowing count", IA, "overflows size_t", put, one.ctypes.data, 2**62, F64, peer, win.handle, 0, 0,
             0, 0, comm, 0)
    k.raises("huge offset", IA, "is beyond", put, one.ctypes.data, 1, F64, peer, win.handle, 2**64 - 4, 0, 0, 0,
             comm, 0)
    k.raises("peer out of range", IA, f"peer {n} is outside [0, {n})", put, one.ctypes.data, 1, F64, n, win.handle,
             0, 0, 0, 0, comm, 0)
    k.raises("garbage window", IA, "is not a registered window of this communicator", put, one.ctypes.data, 1, F64,
             peer, 0x1234560, 0, 0, 0, 0, comm, 0)
    k.raises("sigIdx", IA, "sigIdx 1: only signal index 0", put, one.ctypes.data, 1, F64, peer, win.handle, 0, 1, 0,
             0, comm, 0)
    k.raises("ctx", IA, "ctx 2: only context 0", b.signal, peer, 0, 2, 0, comm, 0)
    k.raises("flags", IA, "flags 0x1", b.signal, peer, 0, 0, 1, comm, 0)
    k.raises("signal peer", IA, "peer -1 is outside", b.signal, -1, 0, 0, 0, comm, 0)
    k.raises("wait peer", IA, f"signalDescs[1].peer {n} is outside [0, {n})", c.wait_signal,
             [WaitSignalDesc(peer, 0), WaitSignalDesc(n)])
    k.raises("wait opCnt", IA, "signalDescs[0].opCnt -1 is negative", c.wait_signal, WaitSignalDesc(peer, -1))
    k.raises("wait sigIdx", IA, "only signal index 0", c.wait_signal, WaitSignalDesc(peer, 1, 3))
    # nccl.core checks a peer before the library, with a message naming it, as send and recv do
    ranks = f"{n} rank{'s' if n != 1 else ''}"
    k.raises("core signal peer", core.NcclInvalid, f"signal: peer={n} is out of range for a communicator of {ranks}",
             c.signal, n)
    k.raises("core put_signal peer", core.NcclInvalid,
             f"put_signal: peer=-1 is out of range for a communicator of {ranks}", c.put_signal, one, -1, win)
    k.raises("peer pointer offset", IA, "offset 4097 is beyond rank", b.get_peer_device_pointer, win.handle, 4097,
             peer)
    k.raises("peer pointer peer", IA, f"peer {n} is outside", b.get_peer_device_pointer, win.handle, 0, n)
    k.raises("user ptr garbage", IA, "is not a registered window", b.win_get_user_ptr, comm, 0x1234560)
    # a window of another communicator (a split of this one)
    box = b.PointerBox()
    b.comm_split(comm, 0, me, box.address, 0)
    other = E.Communicator(box.ptr)
    obuf, oarr = alloc(4096)
    ow = other.register_window(obuf)
    k.raises("another communicator's window", IA, "is not a registered window of this communicator", put,
             one.ctypes.data, 1, F64, peer, ow.handle, 0, 0, 0, 0, comm, 0)
    k.raises("another communicator's window (user ptr)", IA, "is not a registered window", b.win_get_user_ptr,
             comm, ow.handle)
    ow.close()
    b.comm_destroy(box.ptr)
    # a deregistered window
    stale = win.handle
    win.close()
    k.raises("deregistered window", IA, "is not a registered window of this communicator", put, one.ctypes.data, 1,
             F64, peer, stale, 0, 0, 0, 0, comm, 0)
    k.raises("deregister twice", IA, "is not a registered window", b.comm_window_deregister, comm, stale)
    k.raises("peer pointer of a deregistered window", IA, "is not a registered window", b.get_peer_device_pointer,
             stale, 0, peer)
    # inside a group the error is returned at the call and the group end returns it too
    b.group_start()
    k.raises("bad put in a group", IA, "is not a registered window", put, one.ctypes.data, 1, F64, peer, stale, 0, 0,
             0, 0, comm, 0)
    k.raises("group end after a bad put", IA, "", b.group_end)
    # still usable: one put/wait round
    buf2, arr2 = alloc(64)
    arr2[:] = 0
    w2 = c.register_window(buf2)
    c.put_signal(np.full(2, 5.0), peer, w2, 1)
    c.wait_signal(WaitSignalDesc((me - 1) % n))
    k.equal("after the errors", arr2[:4], [0, 5, 5, 0])
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    w2.close()
    core.mem_free(buf)
    core.mem_free(buf2)
    core.mem_free(obuf)
    return k.result()


def wait_then_peer_dies(ctx):
    """Rank 0 waits for a signal that never comes; the last rank kills itself with SIGKILL: the
    wait ends with ncclRemoteError naming it, long before the deadline."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    buf, arr = alloc(4096)
    win = c.register_window(buf)
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    if me == n - 1:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    if me == 0:
        t0 = time.monotonic()
        # the wait's own check names the rank ("... from rank r, which died"), or the communicator's
        # error does when the monitor got there first ("... peer rank r ... exited")
        e = k.raises("wait on a dead peer", b.NCCLRemoteError, f"rank {n - 1}",
                     c.wait_signal, WaitSignalDesc(n - 1))
        ctx.extra["elapsed"] = time.monotonic() - t0
        ctx.extra["error"] = str(e)
    _KEEP.append(win)  # the communicator is in error: no collective deregistration
    return k.result()


def abort_during_wait(ctx):
    """Rank 0 waits for a signal; another of its threads aborts the communicator: the wait ends
    with ncclInvalidUsage ("communicator aborted"); the peers see rank 0 abort."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    if me == 0:
        comm = ctx.comm
        t = threading.Timer(0.3, lambda: b.comm_abort(comm))
        t.start()
        k.raises("wait aborted", b.NCCLInvalidUsage, "communicator aborted", c.wait_signal, WaitSignalDesc(n - 1))
        t.join()
        ctx.comm = None  # aborted: rank_main must not destroy it
    else:
        k.raises("wait on an aborted peer", b.NCCLRemoteError, "rank 0", c.wait_signal, WaitSignalDesc(0))
    return k.result()


def wait_deadline(ctx):
    """NCCL_HOST_TIMEOUT=1: rank 0 waits for a signal rank 1 never sends (rank 1 stays alive):
    ncclTimeout naming rank 1 and what was awaited."""
    k = Checker(ctx)
    c, me = k.comm, k.rank
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    if me == 0:
        k.raises("wait past the deadline", b.NCCLTimeout, "waiting for rank 1 (its ncclPutSignal/ncclSignal)",
                 c.wait_signal, WaitSignalDesc(1))
    else:
        time.sleep(3)
    return k.result()


def senders_leave(ctx):
    """Every rank but 0 puts into rank 0's window and leaves at once (destroy): rank 0's later
    wait still counts their signals and sees their data."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    buf, arr = alloc(8 * n)
    arr[:] = 0
    win = c.register_window(buf)
    _KEEP.append(win)  # destroyed with its communicator: the ranks leave at different times
    if me != 0:
        c.put_signal(np.full(1, 10.0 + me), 0, win, me)
        return k.result()
    time.sleep(1)
    c.wait_signal([WaitSignalDesc(p) for p in range(1, n)])
    k.equal("data of ranks that left", arr[1:], 10.0 + np.arange(1, n))
    return k.result()


def register_then_peer_dies(ctx):
    """The last rank is killed (SIGKILL) instead of registering: the others' registration fails
    with ncclRemoteError naming it, well before the deadline."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    if me == n - 1:
        os.kill(os.getpid(), signal.SIGKILL)
    buf, _ = alloc(4096)
    e = k.raises("registration with a dead peer", b.NCCLRemoteError, "", c.register_window, buf)
    ctx.extra["error"] = str(e)
    return k.result()


def nonblocking(ctx):
    """A nonblocking communicator (config.blocking = 0): the registration, the put and the wait
    each return success or ncclInProgress; polling ncclCommGetAsyncError to success then shows
    the handle, and the data."""
    k = Checker(ctx)
    n, me = ctx.size, ctx.rank
    cfg = b.Config()
    cfg.blocking = 0
    box = b.PointerBox()
    b.comm_init_rank_config(box.address, n, ctx.uid, me, cfg.ptr)
    comm = box.ptr

    def settle():
        deadline = time.monotonic() + 20
        while int(b.comm_get_async_error(comm)) == int(b.Result.InProgress) and time.monotonic() < deadline:
            time.sleep(0.001)
        return int(b.comm_get_async_error(comm))

    settle()
    buf, arr = alloc(64)
    arr[:] = 0
    wbox = b.PointerBox()
    b.comm_window_register(comm, arr.ctypes.data, 64, wbox.address, 0)
    if settle() != 0 or wbox.ptr == 0:
        k.fail(f"registration: state {settle()}, handle {wbox.ptr:#x}")
    v = np.full(2, 3.0 + me)
    b.put_signal(v.ctypes.data, 2, F64, (me + 1) % n, wbox.ptr, 16, 0, 0, 0, comm, 0)
    settle()
    desc = np.array([1, (me - 1) % n, 0, 0], np.int32)
    b.wait_signal(1, desc.ctypes.data, comm, 0)
    if settle() != 0:
        k.fail(f"wait: state {settle()}")
    k.equal("nonblocking put", arr[:5], [0, 0, 3.0 + (me - 1) % n, 3.0 + (me - 1) % n, 0])
    b.comm_window_deregister(comm, wbox.ptr)
    settle()
    b.comm_destroy(comm)
    core.mem_free(buf)
    return k.result()
