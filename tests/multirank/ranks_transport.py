"""Rank-side checks of the host backend's transports (src/host/transport.c): spinning, single-copy
reads under guard pages, peer death in the middle of a single-copy read."""

import ctypes
import mmap
import os
import resource
import signal
import threading
import time

import numpy as np

import nccl.bindings.nccl as b
import reference as R

DT, OP = b.DataType, b.RedOp

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PAGE = mmap.PAGESIZE


def init_comm(ctx):
    box = b.PointerBox()
    b.comm_init_rank(box.address, ctx.size, ctx.uid, ctx.rank)
    return box.ptr


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def idle_wait(ctx):
    """Optionally pin every rank to one CPU (params "one_cpu": the ranks then outnumber their
    CPUs) or each rank to a CPU of its own ("own_cpu": a spin is then never skipped for a peer
    last seen on the same CPU, wherever the scheduler would have put them), then rank 0 waits in
    an AllReduce for the last rank, which arrives after params["late"] seconds, params["rounds"]
    times (default 1). Returns rank 0's CPU time and wall time over those waits."""
    cpus = sorted(os.sched_getaffinity(0))
    if ctx.params.get("one_cpu"):
        os.sched_setaffinity(0, {cpus[0]})
    elif ctx.params.get("own_cpu"):
        os.sched_setaffinity(0, {cpus[ctx.rank % len(cpus)]})
    comm = init_comm(ctx)
    x = np.ones(4, np.float32)
    b.all_reduce(x.ctypes.data, x.ctypes.data, 4, DT.Float32, OP.Sum, comm, 0)  # everyone is up
    c0, w0 = cpu_seconds(), time.monotonic()
    for _ in range(ctx.params.get("rounds", 1)):
        if ctx.rank == ctx.size - 1:
            time.sleep(ctx.params["late"])
        b.all_reduce(x.ctypes.data, x.ctypes.data, 4, DT.Float32, OP.Sum, comm, 0)
    res = {"cpu": cpu_seconds() - c0, "wall": time.monotonic() - w0}
    b.comm_destroy(comm)
    return res


def forbid_process_vm_readv():
    """A seccomp filter on this thread and the threads it starts later (the library's): every
    process_vm_readv fails with EPERM, as under a container's seccomp policy. x86_64 only."""
    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    audit_arch_x86_64, nr_process_vm_readv = 0xC000003E, 310
    prog = (SockFilter * 6)(
        SockFilter(ld_w_abs, 0, 0, 4),                       # seccomp_data.arch
        SockFilter(jeq_k, 0, 3, audit_arch_x86_64),
        SockFilter(ld_w_abs, 0, 0, 0),                       # seccomp_data.nr
        SockFilter(jeq_k, 0, 1, nr_process_vm_readv),
        SockFilter(ret_k, 0, 0, 0x00050000 | 1),             # SECCOMP_RET_ERRNO | EPERM
        SockFilter(ret_k, 0, 0, 0x7FFF0000))                 # SECCOMP_RET_ALLOW
    fprog = SockFprog(len(prog), prog)
    _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if _libc.prctl(38, 1, None, 0, 0) != 0 or _libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # NO_NEW_PRIVS, SECCOMP
        raise OSError(ctypes.get_errno(), "installing the seccomp filter failed")


def one_rank_cannot_read(ctx):
    """Rank 1 may not use process_vm_readv: every rank must fall back to the shared segment, and a
    large AllGather (single copy forced on by the test) still gives the right answer."""
    if ctx.rank == 1:
        forbid_process_vm_readv()
    comm = init_comm(ctx)
    n, r, count = ctx.size, ctx.rank, 100_000
    x = np.full(count, float(r + 1), np.float32)
    y = np.zeros(n * count, np.float32)
    b.all_gather(x.ctypes.data, y.ctypes.data, count, DT.Float32, comm, 0)
    b.comm_destroy(comm)
    return {"ok": bool(np.array_equal(y, np.repeat(np.arange(1, n + 1, dtype=np.float32), count)))}


# ---- guard pages ----

class PageGuarded:
    """count float32 elements in their own mapping, flush against a PROT_NONE page at the end
    (where="end") or right after one at the start (where="start"): any byte read or written
    outside the buffer faults (a crash on our side, EFAULT in a peer's process_vm_readv)."""

    def __init__(self, count, where, fill=0.0):
        nbytes = count * 4
        self.pages = (nbytes + PAGE - 1) // PAGE + 2
        self.base = _libc.mmap(None, self.pages * PAGE, mmap.PROT_READ | mmap.PROT_WRITE,
                               mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if self.base in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        for page in (0, self.pages - 1):
            if _libc.mprotect(self.base + page * PAGE, PAGE, 0) != 0:
                raise OSError(ctypes.get_errno(), "mprotect failed")
        inner = (self.pages - 2) * PAGE
        self.addr = self.base + PAGE + (inner - nbytes if where == "end" else 0)
        self.array = np.ctypeslib.as_array((ctypes.c_float * count).from_address(self.addr))
        self.array[:] = fill

    def at(self, elem=0):
        return self.addr + 4 * elem

    def free(self):
        self.array = None
        _libc.munmap(self.base, self.pages * PAGE)


def guard_pages(ctx):
    """Every collective and a send/recv ring, in and out of place, roots 0 and n-1, on buffers
    flush against guard pages at either end; results checked against numpy."""
    n, r, comm = ctx.size, ctx.rank, ctx.comm
    count = ctx.params["count"]
    f32 = DT.Float32
    failures = []
    live = []

    def buf(k, fill=0.0, where="end"):
        g = PageGuarded(k, where, fill)
        live.append(g)
        return g

    def inputs(k, salt):
        return [R.make_input(f32, k, j, salt) for j in range(n)]

    def check(what, got, want):
        if not np.array_equal(got, want):
            failures.append(f"rank {r}: {what}: got {got[:6]!r} want {np.asarray(want)[:6]!r}")

    for where in ("end", "start"):
        xs, big = inputs(count, 1), inputs(n * count, 2)
        total = np.sum(np.stack(xs).astype(np.float32), axis=0, dtype=np.float32)
        bigsum = np.sum(np.stack(big).astype(np.float32), axis=0, dtype=np.float32)
        s, d = buf(count, xs[r], where), buf(count, 0, where)
        b.all_reduce(s.at(), d.at(), count, f32, OP.Sum, comm, 0)
        check(f"AllReduce ({where})", d.array, total)
        ip = buf(count, xs[r], where)
        b.all_reduce(ip.at(), ip.at(), count, f32, OP.Sum, comm, 0)
        check(f"AllReduce in place ({where})", ip.array, total)
        s, d = buf(n * count, big[r], where), buf(count, 0, where)
        b.reduce_scatter(s.at(), d.at(), count, f32, OP.Sum, comm, 0)
        check(f"ReduceScatter ({where})", d.array, bigsum[r * count:(r + 1) * count])
        ip = buf(n * count, big[r], where)
        b.reduce_scatter(ip.at(), ip.at(r * count), count, f32, OP.Sum, comm, 0)
        check(f"ReduceScatter in place ({where})", ip.array[r * count:(r + 1) * count],
              bigsum[r * count:(r + 1) * count])
        s, d = buf(count, xs[r], where), buf(n * count, 0, where)
        b.all_gather(s.at(), d.at(), count, f32, comm, 0)
        check(f"AllGather ({where})", d.array, np.concatenate(xs))
        ip = buf(n * count, 0, where)
        ip.array[r * count:(r + 1) * count] = xs[r]
        b.all_gather(ip.at(r * count), ip.at(), count, f32, comm, 0)
        check(f"AllGather in place ({where})", ip.array, np.concatenate(xs))
        s, d = buf(n * count, big[r], where), buf(n * count, 0, where)
        b.allto_all(s.at(), d.at(), count, f32, comm, 0)
        check(f"AlltoAll ({where})", d.array, np.concatenate([big[j][r * count:(r + 1) * count] for j in range(n)]))
        for root in sorted({0, n - 1}):
            s, d = buf(count, xs[r], where), buf(count, 0, where)
            b.broadcast(s.at(), d.at(), count, f32, root, comm, 0)
            check(f"Broadcast root={root} ({where})", d.array, xs[root])
            ip = buf(count, xs[r], where)
            b.broadcast(ip.at(), ip.at(), count, f32, root, comm, 0)
            check(f"Broadcast in place root={root} ({where})", ip.array, xs[root])
            s, d = buf(count, xs[r], where), buf(count, 0, where)
            b.reduce(s.at(), d.at(), count, f32, OP.Sum, root, comm, 0)
            if r == root:
                check(f"Reduce root={root} ({where})", d.array, total)
            ip = buf(count, xs[r], where)
            b.reduce(ip.at(), ip.at(), count, f32, OP.Sum, root, comm, 0)
            check(f"Reduce in place root={root} ({where})", ip.array, total if r == root else xs[r])
            s, d = buf(count, xs[r], where), buf(n * count, 0, where)
            b.gather(s.at(), d.at(), count, f32, root, comm, 0)
            if r == root:
                check(f"Gather root={root} ({where})", d.array, np.concatenate(xs))
            s, d = buf(n * count, big[r], where), buf(count, 0, where)
            b.scatter(s.at(), d.at(), count, f32, root, comm, 0)
            check(f"Scatter root={root} ({where})", d.array, big[root][r * count:(r + 1) * count])
        s, d = buf(count, xs[r], where), buf(count, 0, where)
        b.group_start()
        b.send(s.at(), count, f32, (r + 1) % n, comm, 0)
        b.recv(d.at(), count, f32, (r - 1) % n, comm, 0)
        b.group_end()
        check(f"send/recv ring ({where})", d.array, xs[(r - 1) % n])
        while live:
            live.pop().free()
    return {"failures": failures}


# ---- a peer killed during a single-copy read ----

def kill_during_read(ctx):
    """params: {"what": "broadcast" | "sendrecv", "victim": "sender" | "reader", "count"}.
    Rank n-1 sends `count` float32 to every other rank (a Broadcast from it, or one ncclSend per
    rank); rank 0 runs its part in a thread and watches its own receive buffer: once the first
    page has arrived and the last has not, the read is under way, and rank 0 SIGKILLs the victim
    (the sender, or itself). Returns what each survivor got (for a call that returned: whether a
    receiver holds the whole message, "data_ok"), and whether the kill was mid-read."""
    n, r, comm = ctx.size, ctx.rank, ctx.comm
    p = ctx.params
    count = p["count"]
    sender = n - 1
    pids = np.zeros(n, np.int64)
    mine = np.array([os.getpid()], np.int64)
    b.all_gather(mine.ctypes.data, pids.ctypes.data, 1, DT.Int64, comm, 0)  # also: everyone is up
    x = np.full(count, float(n) if r == sender else -1.0, np.float32)
    out = {"type": None}

    def transfer():
        t0 = time.monotonic()
        try:
            if p["what"] == "broadcast":
                b.broadcast(x.ctypes.data, x.ctypes.data, count, DT.Float32, sender, comm, 0)
            elif r == sender:
                b.group_start()
                for j in range(n - 1):
                    b.send(x.ctypes.data, count, DT.Float32, j, comm, 0)
                b.group_end()
            else:
                b.recv(x.ctypes.data, count, DT.Float32, sender, comm, 0)
        except b.NCCLError as exc:
            out.update(type=type(exc).__name__, status=int(exc.status), msg=str(exc))
        else:
            out["data_ok"] = r == sender or bool((x == float(n)).all())
        out["elapsed"] = time.monotonic() - t0

    if r != 0:
        transfer()
    else:
        th = threading.Thread(target=transfer)
        th.start()
        mid = False
        while th.is_alive():
            if x[0] != -1.0 and x[-1] == -1.0:
                mid = True
                os.kill(int(pids[sender] if p["victim"] == "sender" else pids[0]), signal.SIGKILL)
                break
        th.join()
        out["mid_read"] = mid
    c, ctx.comm = ctx.comm, None
    b.comm_abort(c)
    return out
