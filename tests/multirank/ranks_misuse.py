"""Rank-side checks of misuse on the host backend's one-sided surface and groups
(docs/host-backend.md#memory-and-registration, #windows-and-one-sided-operations, #groups):
memory that is not live refused at registration, in both layers; ncclMemFree of memory a window
covers; windows used after their communicator went, after deregistration, from a forked child,
while the peer deregisters, and registered inside a group; grouped send/recv over overlapping
buffers. Each gets a clear error, the communicator stays usable, and nothing is left behind."""

import ctypes
import gc
import mmap
import os
import sys
import time
import warnings

import numpy as np

import nccl._ext as E
import nccl.bindings.nccl as b
import nccl.core as core
from nccl.core import WaitSignalDesc
from ranks_rma import Checker, alloc

F64 = int(b.DataType.Float64)
IA, IU = b.NCCLInvalidArgument, b.NCCLInvalidUsage


def _register(comm, ptr, size):
    box = b.PointerBox()
    b.comm_window_register(comm, ptr, size, box.address, 0)
    return box.ptr


def _unmapped_address():
    """An address that was mapped a moment ago and is not any more."""
    m = mmap.mmap(-1, 4 * mmap.PAGESIZE)
    view = ctypes.c_char.from_buffer(m)
    addr = ctypes.addressof(view)
    del view
    m.close()
    return addr


def _round_trip(k, what):
    """One put/wait round over a fresh window: the communicator still works."""
    c, n, me = k.comm, k.size, k.rank
    buf, arr = alloc(64)
    arr[:] = 0
    w = c.register_window(buf)
    c.put_signal(np.full(2, 7.0 + me), (me + 1) % n, w, 1)
    c.wait_signal(WaitSignalDesc((me - 1) % n))
    k.equal(f"a put after {what}", arr[:4], [0, 7.0 + (me - 1) % n, 7.0 + (me - 1) % n, 0])
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    w.close()
    core.mem_free(buf)


def freed_memory_bindings(ctx):
    """comm_window_register of memory that is not live: a range past the end of its ncclMemAlloc
    block (8,192 bytes and 2**63 over 4,096), an address in a block already freed (the put to
    self that followed used to kill the process), a range not mapped at all, one that wraps. Every
    rank refuses the same call, so each gets its own text; then rank 0 alone refuses and the
    others hear it at once. ncclMemFree of a block a window covers is refused, and the peer's put
    into it lands; after deregistration the free works."""
    k = Checker(ctx)
    comm, n, me = ctx.comm, k.size, k.rank
    p = b.mem_alloc(4096)
    k.raises("8192 bytes over a 4096-byte block", IA, f"buff {p:#x} + size 8192 runs past the end of the "
             f"ncclMemAlloc block it starts in (4096 bytes at {p:#x}", _register, comm, p, 8192)
    k.raises("2**63 bytes over a 4096-byte block", IA, f"+ size {2**63} runs past the end", _register, comm, p, 2**63)
    k.raises("a range starting inside the block and running past it", IA, "the range starts 4000 bytes into it",
             _register, comm, p + 4000, 200)
    b.mem_free(p)
    k.raises("a freed block", IA, f"buff {p:#x} lies in an ncclMemAlloc block that was freed (ncclMemFree)",
             _register, comm, p, 4096)
    k.raises("inside a freed block", IA, "lies in an ncclMemAlloc block that was freed", _register, comm, p + 64, 8)
    gone = _unmapped_address()
    k.raises("unmapped memory", IA, f"buff {gone:#x} + size 4096 is not memory of this process", _register, comm,
             gone, 4096)
    k.raises("a wrapping range", IA, "wraps around the address space", _register, comm, 2**64 - 4096, 8192)
    if n > 1:  # rank 0 alone passes freed memory: the others fail in the same exchange
        good, _ = alloc(4096)
        p = b.mem_alloc(4096)  # freed just before its use: nothing maps its address again meanwhile
        b.mem_free(p)
        t0 = time.monotonic()
        if me == 0:
            k.raises("freed memory, alone", IA, "lies in an ncclMemAlloc block that was freed", _register, comm, p,
                     4096)
        else:
            k.raises("a peer's freed memory", IA, "rank 0 failed its part", k.comm.register_window, good)
        elapsed = time.monotonic() - t0
        if elapsed > 20:  # the deadline is 30 s: the refusal must not wait for it
            k.fail(f"the refusal took {elapsed:.1f} s")
        core.mem_free(good)
    # ncclMemFree of a registered block: refused, the block stays, the peer's put lands in it
    q = b.mem_alloc(4096)
    arr = np.frombuffer((ctypes.c_char * 4096).from_address(q), dtype=np.float64)
    arr[:] = 0
    w = _register(comm, q, 4096)
    k.raises("ncclMemFree of a registered block", IU, f"ncclMemFree: {q:#x} is still registered in 1 window(s)",
             b.mem_free, q)
    v = np.full(1, 3.0 + me)
    b.put_signal(v.ctypes.data, 1, F64, (me + 1) % n, w, 8, 0, 0, 0, comm, 0)
    k.comm.wait_signal(WaitSignalDesc((me - 1) % n))
    k.equal("a put into a block whose free was refused", arr[:3], [0, 3.0 + (me - 1) % n, 0])
    k.comm.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    b.comm_window_deregister(comm, w)
    b.mem_free(q)
    _round_trip(k, "the refusals")
    return k.result()


def freed_memory_core(ctx):
    """nccl.core: a Buffer whose memory was freed is refused before the call (register_window,
    register_buffer, a collective), where a window of 0 bytes used to be registered; a numpy
    view of freed memory is refused by the library; mem_free of a Buffer a window covers raises
    and leaves the Buffer open and usable; after the window closed it frees."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    bb = core.mem_alloc(4096)
    core.mem_free(bb)
    closed = "buffer: the Buffer is closed: its memory was freed"
    k.raises("register_window of a freed Buffer", core.NcclInvalid, closed, c.register_window, bb)
    k.raises("register_buffer of a freed Buffer", core.NcclInvalid, closed, c.register_buffer, bb)
    k.raises("allreduce into a freed Buffer", core.NcclInvalid, "recvbuf: the Buffer is closed", c.allreduce,
             np.zeros(8, np.int8), bb, b.RedOp.Sum)
    view_of, view = alloc(4096)
    core.mem_free(view_of)
    k.raises("register_window of a view of freed memory", IA, "lies in an ncclMemAlloc block that was freed",
             c.register_window, view)
    buf, arr = alloc(4096)
    arr[:] = 0
    win = c.register_window(buf)
    k.raises("mem_free of a registered Buffer", IU, "is still registered in 1 window(s)", core.mem_free, buf)
    if buf.handle == 0 or buf.size != 4096:
        k.fail(f"the Buffer changed after the refused free: handle {buf.handle:#x}, size {buf.size}")
    if win.size != 4096:
        k.fail(f"window size {win.size}")
    c.put_signal(np.full(1, 5.0 + me), (me + 1) % n, win, 2)
    c.wait_signal(WaitSignalDesc((me - 1) % n))
    k.equal("a put after the refused free", arr[2], 5.0 + (me - 1) % n)
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    win.close()
    core.mem_free(buf)
    if buf.handle != 0:
        k.fail("mem_free after close left the Buffer open")
    _collected_while_registered(k)
    return k.result()


def _collected_while_registered(k):
    """A communicator dropped with a registered Buffer and neither closed: the cycle is collected,
    the window is still registered in the library, so the Buffer's free is refused. The collector
    says so as a ResourceWarning naming the Buffer (never an "Exception ignored" report), beside
    the communicator's own ResourceWarning."""
    comm = core.Communicator.init(1, 0, core.get_unique_id())
    buf = core.mem_alloc(4096)
    comm.register_window(buf)
    ptr = buf.handle
    unraisable = []
    old_hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del comm, buf
            gc.collect()
    finally:
        sys.unraisablehook = old_hook
    said = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    freed = [m for m in said if f"a Buffer of 4096 bytes at {ptr:#x} was collected" in m]
    if unraisable or len(freed) != 1 or "still registered in 1 window(s)" not in freed[0]:
        k.fail(f"collecting a registered Buffer: warnings {said}, unraisable {unraisable}")


def _child(fn):
    """fn() in a forked child: what it raised (type name and last error) or None."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            fn()
            said = b"ok"
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            said = f"{type(exc).__name__}: {getattr(exc, 'last_error', '') or exc}".encode()
        os.write(w, said[:4000])
        os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 4096):
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return out.decode()


def windows_misuse(ctx):
    """A window used after its communicator was destroyed or aborted; a deregistered handle
    after a new window was registered (its record's address is reused, its handle is not); a put
    while the peer is deregistering; a registration refused inside a group; a window and its
    communicator used from a forked child, which must leave the parent's job untouched."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    comm, peer, prev = ctx.comm, (me + 1) % n, (me - 1) % n
    buf, arr = alloc(4096)
    arr[:] = 0
    one = np.ones(1)
    # after destroy and abort (of a split child), raw and nccl.core
    for how in ("destroy", "abort"):
        box = b.PointerBox()
        b.comm_split(comm, 0, me, box.address, 0)
        child = E.Communicator(box.ptr)
        w = child.register_window(buf)
        h = w.handle
        getattr(child, how)()
        if w.is_valid:
            k.fail(f"the window is valid after {how}")
        k.raises(f"put through a destroyed communicator ({how})", IA, "was already destroyed or aborted",
                 b.put_signal, one.ctypes.data, 1, F64, peer, h, 0, 0, 0, 0, box.ptr, 0)
        k.raises(f"its window on the parent ({how})", IA, "is not a registered window of this communicator",
                 b.put_signal, one.ctypes.data, 1, F64, peer, h, 0, 0, 0, 0, comm, 0)
        k.raises(f"peer pointer ({how})", IA, "is not a registered window", b.get_peer_device_pointer, h, 0, peer)
        k.raises(f"nccl.core put ({how})", b.NCCLNullHandleError, "Communicator not initialized", child.put_signal,
                 one, peer, w, 0)
        w.close()  # closed already: a no-op
    # a stale handle never names a later window
    w1 = c.register_window(buf)
    stale = w1.handle
    w1.close()
    w2 = c.register_window(buf)
    if w2.handle == stale:
        k.fail("a new window got the handle of a deregistered one")
    k.raises("a deregistered handle", IA, "is not a registered window of this communicator", b.put_signal,
             one.ctypes.data, 1, F64, peer, stale, 0, 0, 0, 0, comm, 0)
    # a put while the peer is in the middle of deregistering (rank 1 deregisters first and waits)
    if me == 1:
        w2.close()
        c.wait_signal(WaitSignalDesc(0))
        k.equal("data put while this rank deregistered", arr[3], 42.0)
    else:
        if me == 0:
            time.sleep(0.3)
            c.put_signal(np.full(1, 42.0), 1, w2, 3)
        w2.close()
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    # a registration refused inside a group: the group fails on every rank, no handle is written
    freed = b.mem_alloc(4096)
    b.mem_free(freed)
    box = b.PointerBox()
    b.group_start()
    b.comm_window_register(comm, freed if me == 0 else arr.ctypes.data, 4096, box.address, 0)
    k.raises("group end with a refused registration", IA, "", b.group_end)
    if box.ptr != 0:
        k.fail(f"a handle {box.ptr:#x} was written by a failed group")
    # a forked child: every use refused, the parent's job untouched
    w3 = c.register_window(buf)
    h3 = w3.handle
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    if me == 0:
        fork_msg = "created before fork(); it cannot be used in the child"
        for what, fn in [("peer pointer", lambda: b.get_peer_device_pointer(h3, 0, peer)),
                         ("put", lambda: b.put_signal(one.ctypes.data, 1, F64, peer, h3, 0, 0, 0, 0, comm, 0)),
                         ("wait", lambda: b.wait_signal(0, 0, comm, 0)),
                         ("deregister", lambda: b.comm_window_deregister(comm, h3)),
                         ("destroy", lambda: b.comm_destroy(comm)),
                         ("abort", lambda: b.comm_abort(comm))]:
            said = _child(fn)
            if not said.startswith("NCCLInvalidUsage") or fork_msg not in said:
                k.fail(f"{what} in a forked child: {said}")
        said = _child(lambda: core.mem_free(buf))  # the child's copy is its own: freeing it is fine
        if said != "ok":
            k.fail(f"mem_free in a forked child: {said}")
    c.put_signal(np.full(1, 9.0 + me), peer, w3, 4)
    c.wait_signal(WaitSignalDesc(prev))
    k.equal("a put after the forked child", arr[4], 9.0 + prev)
    c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)
    w3.close()
    core.mem_free(buf)
    _round_trip(k, "the misuse")
    return k.result()


def grouped_overlap(ctx):
    """A grouped send and recv over the same or overlapping bytes: ncclInvalidArgument naming
    both, every time (it gave wrong data with no error before); disjoint buffers and a self copy
    onto itself still work. Under NCCL_HOST_CHECKS=0 (params["checks"] 0) it is not refused."""
    k = Checker(ctx)
    c, n, me = k.comm, k.size, k.rank
    peer, prev = (me + 1) % n, (me - 1) % n
    x = np.arange(1024, dtype=np.float32) + 1000 * me
    if ctx.params["checks"] == 0:
        with core.group():
            c.send(x, peer)
            c.recv(x, prev)
        return k.result()

    def grouped(*calls):
        with core.group():
            for fn, *args in calls:
                fn(*args)
    for i in range(20):
        k.raises(f"same buffer, iteration {i}", IA, f"the ncclRecv from rank {prev} into {x.ctypes.data:#x} (4096 "
                 f"bytes) overlaps the ncclSend to rank {peer} from {x.ctypes.data:#x} (4096 bytes) in the same group",
                 grouped, (c.send, x, peer), (c.recv, x, prev))
    k.raises("overlapping halves", IA, "overlaps the ncclSend", grouped, (c.send, x[:600], peer),
             (c.recv, x[500:], prev))
    k.raises("a self receive over a send to a peer", IA, "overlaps the ncclSend", grouped, (c.send, x, peer),
             (c.recv, np.zeros(1024, np.float32), prev), (c.send, x[:10], me), (c.recv, x[10:20], me))
    y = np.zeros(1024, np.float32)
    grouped((c.send, x, peer), (c.recv, y, prev), (c.send, x, me), (c.recv, x, me))
    k.equal("disjoint buffers, a self copy onto itself", y, np.arange(1024, dtype=np.float32) + 1000 * prev)
    k.equal("the self copy", x, np.arange(1024, dtype=np.float32) + 1000 * me)
    return k.result()
