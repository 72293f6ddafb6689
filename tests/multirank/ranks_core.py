"""Rank-side checks of the C Communicator's collective, point-to-point and resource methods
(src/ext/core/collectives.c, src/ext/core/resources.c) on the host backend, against numpy references.

Each rank derives every rank's input from (dtype, count, rank), so it computes the expected
result of any collective locally. A check returns {"failures": [...], "ncalls": n}.
"""

import sys

import numpy as np

import nccl._ext as E
import nccl.bindings.nccl as b
import nccl.core  # noqa: F401  (registers the Python classes E.Communicator hands back)
from nccl._errors import NcclInvalid

SUM, PROD, MAX, MIN, AVG = b.RedOp.Sum, b.RedOp.Prod, b.RedOp.Max, b.RedOp.Min, b.RedOp.Avg
OPS = [SUM, PROD, MAX, MIN, AVG]


def ml_dtypes():
    """The ml_dtypes module, imported at first use: the import costs a rank about 0.6 s of CPU,
    which only the checks that use bfloat16 or fp8 pay."""
    import ml_dtypes as module

    return module


def dtypes():
    """The element types the reductions and data movement run over."""
    return [np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16,
                                  ml_dtypes().bfloat16, np.float32, np.float64)]


COUNTS = [0, 1, 7, 37]
BLOCKS = [1, 7]  # per-rank block counts of reduce_scatter, alltoall, scatter (0 is rejected there)
MAX_FAILURES = 40


def unsigned(dt):
    return dt.kind == "u"


def is_float(dt):
    return dt.kind == "f" or (dt.kind == "V" and dt == np.dtype(ml_dtypes().bfloat16))


def data(dt, n, rank, op=None):
    """Rank `rank`'s input: small integers whose sums and products are exact in every dtype."""
    i = np.arange(n, dtype=np.int64)
    if op == AVG:  # the same on every rank: the average is then the value itself
        v = (i * 7) % 5
    elif unsigned(dt):
        v = (i * 7 + rank * 3) % 4
    else:
        v = (i * 7 + rank * 3) % 5 - 2
    return v.astype(np.float64).astype(dt)


def reference(dt, n, size, op):
    stack = np.stack([data(dt, n, r, op).astype(np.float64) for r in range(size)]) if n else np.zeros((size, 0))
    f = {SUM: np.sum, PROD: np.prod, MAX: np.max, MIN: np.min, AVG: np.mean}[op]
    return f(stack, axis=0).astype(dt)


class Checker:
    def __init__(self, ctx, comm=None):
        self.ctx, self.rank, self.size = ctx, ctx.rank, ctx.size
        self.comm = comm if comm is not None else E.Communicator(ctx.comm)
        self.failures, self.ncalls = [], 0

    def fail(self, what):
        if len(self.failures) < MAX_FAILURES:
            self.failures.append(f"rank {self.rank}/{self.size}: {what}")

    def same(self, what, got, want, approx=False):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return self.fail(f"{what}: shape {got.shape} != {want.shape}")
        if approx:
            ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-2, atol=1e-6)
        else:
            ok = np.array_equal(got.view(np.uint8), want.view(np.uint8)) if got.size else True
        if not ok:
            self.fail(f"{what}: got {got[:8]!r}, want {want[:8]!r}")

    def raises(self, what, exc_type, message, fn, *args, **kw):
        """fn(*args, **kw) must raise exc_type with exactly `message` (or a prefix ending in '*')."""
        try:
            fn(*args, **kw)
        except exc_type as e:
            text = str(e)
            ok = text.startswith(message[:-1]) if message.endswith("*") else text == message
            if not ok:
                self.fail(f"{what}: message {text!r}, want {message!r}")
            return e
        except Exception as e:  # noqa: BLE001
            self.fail(f"{what}: raised {type(e).__name__}({e}), want {exc_type.__name__}")
            return e
        self.fail(f"{what}: did not raise")
        return None

    def result(self):
        return {"failures": self.failures, "ncalls": self.ncalls}


# ---- correctness ----

def reductions(ctx):
    """allreduce, reduce (roots 0 and n-1), reduce_scatter: dtypes x ops, in and out of place."""
    k = Checker(ctx)
    c, rank, size = k.comm, k.rank, k.size
    for dt in dtypes():
        for op in OPS:
            approx = op == AVG and is_float(dt)
            for n in COUNTS:
                want = reference(dt, n, size, op)
                x = data(dt, n, rank, op)
                y = np.full(n, 99, dtype=dt)
                c.allreduce(x, y, op)
                k.same(f"allreduce {dt} {op.name} n={n}", y, want, approx)
                k.same(f"allreduce {dt} {op.name} n={n} sendbuf untouched", x, data(dt, n, rank, op))
                c.allreduce(x, x, op)
                k.same(f"allreduce in place {dt} {op.name} n={n}", x, want, approx)
                # a larger recvbuf: only the first count elements are written
                z = np.full(n + 2, 99, dtype=dt)
                c.allreduce(data(dt, n, rank, op), z, op=op)
                k.same(f"allreduce big recvbuf {dt} {op.name} n={n}", z[n:], np.full(2, 99, dtype=dt))
                for root in sorted({0, size - 1}):
                    x = data(dt, n, rank, op)
                    y = np.full(n, 99, dtype=dt) if rank == root else None
                    c.reduce(x, y, op, root)
                    if rank == root:
                        k.same(f"reduce root={root} {dt} {op.name} n={n}", y, want, approx)
                    x = data(dt, n, rank, op)
                    c.reduce(x, x, op, root=root)
                    if rank == root:
                        k.same(f"reduce in place root={root} {dt} {op.name} n={n}", x, want, approx)
                k.ncalls += 3 + 2 * len({0, size - 1})
            for blk in BLOCKS:
                full = reference(dt, blk * size, size, op)
                want = full[rank * blk:(rank + 1) * blk]
                x = data(dt, blk * size, rank, op)
                y = np.full(blk, 99, dtype=dt)
                c.reduce_scatter(x, y, op)
                k.same(f"reduce_scatter {dt} {op.name} blk={blk}", y, want, approx)
                x = data(dt, blk * size, rank, op)
                c.reduce_scatter(x, x[rank * blk:(rank + 1) * blk], op)
                k.same(f"reduce_scatter in place {dt} {op.name} blk={blk}", x[rank * blk:(rank + 1) * blk], want,
                       approx)
                k.ncalls += 2
    # reduce(root=None) is allreduce
    x = data(np.dtype(np.float32), 5, rank)
    y = np.zeros(5, np.float32)
    c.reduce(x, y, SUM, None)
    k.same("reduce root=None", y, reference(np.dtype(np.float32), 5, size, SUM))
    return k.result()


def bool_reductions(ctx):
    """Bool buffers (numpy and torch) reduce logically, as torch does: SUM is or, PROD is and, MAX
    and MIN as they are; every result is a valid bool. AVG and a bool/uint8 pair are refused
    (docs/api/collectives.md#bool-buffers)."""
    k = Checker(ctx)
    c, rank, size = k.comm, k.rank, k.size
    # rank r holds True where bit r of the element's index is set: index 2**size - 1 is True on all
    n = 2 ** size
    mine = np.array([(i >> rank) & 1 for i in range(n)], dtype=bool)
    every = [np.array([(i >> r) & 1 for i in range(n)], dtype=bool) for r in range(size)]
    want = {SUM: np.logical_or.reduce(every), MAX: np.logical_or.reduce(every),
            PROD: np.logical_and.reduce(every), MIN: np.logical_and.reduce(every)}
    for op, ref in want.items():
        y = np.zeros(n, bool)
        c.allreduce(mine, y, op)
        k.same(f"allreduce bool {op.name}", y.view(np.uint8), ref.view(np.uint8))
        x = mine.copy()
        c.reduce(x, x, op, root=size - 1)
        if rank == size - 1:
            k.same(f"reduce bool {op.name} in place", x.view(np.uint8), ref.view(np.uint8))
        blocks = np.tile(mine, size)
        out = np.zeros(n, bool)
        c.reduce_scatter(blocks, out, op)
        k.same(f"reduce_scatter bool {op.name}", out.view(np.uint8), ref.view(np.uint8))
        k.ncalls += 3
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t = torch.from_numpy(mine.copy())
        c.allreduce(t, t, SUM)
        k.same("allreduce torch.bool SUM", t.numpy().view(np.uint8), want[SUM].view(np.uint8))
        k.ncalls += 1
    text = ("allreduce: AVG of bool buffers has no bool result; SUM (logical or), PROD (logical and), MAX and MIN "
            "work on bools, or convert the buffers to a number type first")
    k.raises("bool AVG", NcclInvalid, text, c.allreduce, mine, np.zeros(n, bool), AVG)
    k.raises("bool uint8 pair", NcclInvalid, "Dtype mismatch: sendbuf has dtype BOOL, recvbuf has dtype UINT8",
             c.allreduce, mine, np.zeros(n, np.uint8), SUM)
    return k.result()


def data_movement(ctx):
    """broadcast, allgather, gather, scatter, alltoall (in and out of place), send/recv rings."""
    k = Checker(ctx)
    c, rank, size = k.comm, k.rank, k.size
    for dt in dtypes():
        for n in COUNTS:
            for root in sorted({0, size - 1}):
                y = np.full(n, 99, dtype=dt)
                c.broadcast(data(dt, n, rank) if rank == root else None, y, root)
                k.same(f"broadcast root={root} {dt} n={n}", y, data(dt, n, root))
                y = data(dt, n, rank)
                c.broadcast(y if rank == root else "not resolved", y, root=root)
                k.same(f"broadcast in place root={root} {dt} n={n}", y, data(dt, n, root))
                # gather
                want = np.concatenate([data(dt, n, r) for r in range(size)])
                y = np.full(n * size, 99, dtype=dt) if rank == root else None
                c.gather(data(dt, n, rank), y, root)
                if rank == root:
                    k.same(f"gather root={root} {dt} n={n}", y, want)
                if rank == root:
                    y = np.full(n * size, 99, dtype=dt)
                    y[root * n:(root + 1) * n] = data(dt, n, rank)
                    c.gather(y[root * n:(root + 1) * n], y, root)
                    k.same(f"gather in place root={root} {dt} n={n}", y, want)
                else:
                    c.gather(data(dt, n, rank), None, root)
                k.ncalls += 4
            want = np.concatenate([data(dt, n, r) for r in range(size)])
            y = np.full(n * size, 99, dtype=dt)
            c.allgather(data(dt, n, rank), y)
            k.same(f"allgather {dt} n={n}", y, want)
            y = np.full(n * size, 99, dtype=dt)
            y[rank * n:(rank + 1) * n] = data(dt, n, rank)
            c.allgather(y[rank * n:(rank + 1) * n], y)
            k.same(f"allgather in place {dt} n={n}", y, want)
            k.ncalls += 2
        for blk in BLOCKS:
            for root in sorted({0, size - 1}):
                src = data(dt, blk * size, root)
                y = np.full(blk, 99, dtype=dt)
                c.scatter(src if rank == root else None, y, root)
                k.same(f"scatter root={root} {dt} blk={blk}", y, src[rank * blk:(rank + 1) * blk])
                if rank == root:
                    s = src.copy()
                    c.scatter(s, s[root * blk:(root + 1) * blk], root)
                    k.same(f"scatter in place root={root} {dt} blk={blk}", s, src)
                else:
                    y = np.full(blk, 99, dtype=dt)
                    c.scatter(None, y, root)
                    k.same(f"scatter (2) root={root} {dt} blk={blk}", y, src[rank * blk:(rank + 1) * blk])
                k.ncalls += 2
            y = np.full(blk * size, 99, dtype=dt)
            c.alltoall(data(dt, blk * size, rank), y)
            want = np.concatenate([data(dt, blk * size, r)[rank * blk:(rank + 1) * blk] for r in range(size)])
            k.same(f"alltoall {dt} blk={blk}", y, want)
            k.ncalls += 1
        # send/recv ring inside a group, counts 0 and 7
        for n in (0, 7):
            nxt, prv = (rank + 1) % size, (rank - 1) % size
            x = data(dt, n, rank)  # kept alive: the send runs at group_end, not at the call
            y = np.full(n, 99, dtype=dt)
            x = data(dt, n, rank)  # held by a name: the send reads it at group_end, not now
            b.group_start()
            try:
                c.send(x, nxt)
                c.recv(y, peer=prv)
            finally:
                b.group_end()
            k.same(f"send/recv ring {dt} n={n}", y, data(dt, n, prv))
            k.ncalls += 1
    return k.result()


def custom_ops(ctx):
    """create_pre_mul_sum: the scalar forms, results in allreduce, repr, checks and lifecycle."""
    k = Checker(ctx)
    c, rank, size = k.comm, k.rank, k.size
    f32, f64, i32 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)
    DF32, DF64, DI32 = b.DataType.Float32, b.DataType.Float64, b.DataType.Int32
    cases = [
        ("float + FLOAT32", 2.0, DF32, f32, 2, "HostImmediate"),
        ("int + INT32", 3, DI32, i32, 3, "HostImmediate"),
        ("float default FLOAT64", 0.5, None, f64, 0.5, "HostImmediate"),
        ("ndarray float64", np.array([4.0]), None, f64, 4, "HostImmediate"),
        ("ndarray to FLOAT32", np.array([[2]], dtype=np.int64), DF32, f32, 2, "HostImmediate"),
        ("ndarray bfloat16", np.array([2], dtype=ml_dtypes().bfloat16), None, np.dtype(ml_dtypes().bfloat16), 2,
         "HostImmediate"),
        ("float + BFLOAT16", 0.5, b.DataType.Bfloat16, np.dtype(ml_dtypes().bfloat16), 0.5, "HostImmediate"),
        ("device buffer (memoryview)", memoryview(np.array([5.0], np.float32)), None, f32, 5, "Device"),
        ("device buffer + datatype", memoryview(np.array([5.0], np.float32)), DF32, f32, 5, "Device"),
    ]
    for what, scalar, dtarg, dt, factor, residence in cases:
        op = c.create_pre_mul_sum(scalar, dtarg) if dtarg is not None else c.create_pre_mul_sum(scalar)
        r = repr(op)
        want_repr = f"<CustomRedOp: type=PreMulSum, dtype={dt.name.upper()}, residence={residence}, op={int(op)}>"
        if r != want_repr:
            k.fail(f"{what}: repr {r!r} != {want_repr!r}")
        if not (op.is_valid and op.op == int(op) and int(op) >= 5):
            k.fail(f"{what}: op {op.op}, is_valid {op.is_valid}")
        if op.dtype.name != dt.name.upper() or type(op.dtype).__name__ != "NcclDataType":
            k.fail(f"{what}: dtype {op.dtype!r}")
        x = data(dt, 11, rank)
        y = np.zeros(11, dt)
        c.allreduce(x, y, op)
        want = (np.stack([data(dt, 11, r).astype(np.float64) for r in range(size)]) * factor).sum(0).astype(dt)
        k.same(f"{what}: allreduce", y, want)
        c.allreduce(x, x, op)
        k.same(f"{what}: allreduce in place", x, want)
        c.reduce(data(dt, 11, rank), y if rank == 0 else None, op, 0)
        if rank == 0:
            k.same(f"{what}: reduce", y, want)
        # wrong dtype for this op
        k.raises(f"{what}: dtype check", NcclInvalid,
                 f"op: CustomRedOp has dtype {dt.name.upper()}, but the buffers have dtype INT8",
                 c.allreduce, np.zeros(3, np.int8), np.zeros(3, np.int8), op)
        op.close()
        op.close()  # idempotent
        if op.is_valid or repr(op) != "<CustomRedOp: closed>":
            k.fail(f"{what}: after close is_valid={op.is_valid} repr={op!r}")
        k.raises(f"{what}: closed op", NcclInvalid, "op: CustomRedOp has been closed and is no longer valid",
                 c.allreduce, x, y, op)
        k.raises(f"{what}: closed .op", RuntimeError, "CustomRedOp has been closed and is no longer valid",
                 getattr, op, "op")
        k.raises(f"{what}: closed int()", RuntimeError, "CustomRedOp has been closed and is no longer valid",
                 int, op)
        k.ncalls += 3
    # the host array is kept alive on the op: the caller's scalar can go away
    op = c.create_pre_mul_sum(np.array([3.0], np.float32))
    x = np.ones(4, np.float32)
    c.allreduce(x, x, op)
    k.same("kept-alive scalar", x, np.full(4, 3.0 * size, np.float32))
    op.close()
    # scalar rules
    k.raises("2-element ndarray", NcclInvalid, "NumPy array must contain exactly 1 element for scalar, got 2 elements",
             c.create_pre_mul_sum, np.array([1.0, 2.0]))
    k.raises("0-element ndarray", NcclInvalid, "NumPy array must contain exactly 1 element for scalar, got 0 elements",
             c.create_pre_mul_sum, np.zeros(0))
    k.raises("2-element device buffer", NcclInvalid,
             "Device buffer must contain exactly 1 element for scalar, got 2 elements",
             c.create_pre_mul_sum, memoryview(np.zeros(2, np.float32)))
    k.raises("device buffer dtype", NcclInvalid,
             "Device buffer datatype FLOAT32 doesn't match requested datatype FLOAT64",
             c.create_pre_mul_sum, memoryview(np.zeros(1, np.float32)), DF64)
    k.raises("unsupported scalar", NcclInvalid,
             "scalar must be int, float, numpy.ndarray, or NcclSupportedBuffer, got object: *",
             c.create_pre_mul_sum, object())
    k.raises("bad datatype", ValueError, "*", c.create_pre_mul_sum, 1.0, 99)
    for name, dt in (("float8_e4m3fn", "FLOAT8E4M3"), ("float8_e5m2", "FLOAT8E5M2")):
        op = c.create_pre_mul_sum(np.array([1], dtype=getattr(ml_dtypes(), name)))
        if f"dtype={dt}," not in repr(op):
            k.fail(f"ndarray {name}: {op!r}")
        op.close()
    k.raises("unsupported ndarray dtype", NcclInvalid, "Unsupported data type: numpy dtype complex128 (kind=c, *",
             c.create_pre_mul_sum, np.array([1j]))
    # an op of another communicator (a split child: same ranks, another handle)
    child = c.split(0, rank)
    try:
        op = child.create_pre_mul_sum(1.0, DF32)
        k.raises("other communicator", NcclInvalid, "op: CustomRedOp belongs to another communicator",
                 c.allreduce, np.zeros(2, np.float32), np.zeros(2, np.float32), op)
        child.destroy()
        if op.is_valid:
            k.fail("destroy() did not close the child's op")
    finally:
        if child.is_valid:
            child.destroy()
    # create + close in a loop leaves no reference behind
    before = sys.getrefcount(c)
    for _ in range(1000):
        op = c.create_pre_mul_sum(1.5, DF32)
        op.close()
    del op
    if sys.getrefcount(c) != before:
        k.fail(f"create/close loop: refcount of comm {before} -> {sys.getrefcount(c)}")
    return k.result()


def registration(ctx):
    """register_buffer lifecycle, register_window on the host backend, create_dev_comm, resource
    construction rules."""
    k = Checker(ctx)
    c = k.comm
    x = np.zeros(16, np.float64)
    h = c.register_buffer(x)
    if h.size != x.nbytes or not h.is_valid or not isinstance(h.handle, int) or h.handle == 0:
        k.fail(f"register_buffer: size {h.size}, valid {h.is_valid}, handle {h.handle}")
    if repr(h) != f"<RegisteredBufferHandle: size={x.nbytes}, handle={h.handle:#x}>":
        k.fail(f"register_buffer repr {h!r}")
    if type(h).__name__ != "RegisteredBufferHandle" or not isinstance(h, E.CommResource):
        k.fail(f"register_buffer type {type(h)}")
    if type(h).__module__ != "nccl.core.resources":
        k.fail(f"module {type(h).__module__}")
    h.close()
    h.close()
    if h.is_valid or repr(h) != "<RegisteredBufferHandle: closed>":
        k.fail(f"closed handle: {h!r}")
    k.raises("closed handle", RuntimeError, "RegisteredBufferHandle has been closed and is no longer valid",
             getattr, h, "handle")
    # a read-only buffer registers too (NCCL does not write through a registration)
    ro = np.zeros(4, np.int32)
    ro.flags.writeable = False
    h2 = c.register_buffer(ro)
    if h2.size != 16:
        k.fail(f"read-only register size {h2.size}")
    k.raises("register_buffer bad type", NcclInvalid, "buffer: *", c.register_buffer, object())
    # close_all_resources closes the tracked handle
    c.close_all_resources()
    if h2.is_valid:
        k.fail("close_all_resources left the handle open")
    # windows and one-sided calls work on the host backend (tests/multirank/test_rma.py tests them)
    w = c.register_window(x)
    k.ctx.extra["register_window"] = type(w).__name__ if w.handle != 0 else "no handle"
    c.signal(c.rank)

    class Desc:  # the shape of nccl.core's WaitSignalDesc dataclass
        peer, op_count, signal_index, context = c.rank, 1, 0, 0

    c.wait_signal([Desc()])
    c.signal(c.rank)
    c.wait_signal(Desc())
    w.close()
    # the host backend refuses ncclDevCommCreate by name: the library's error, with its last error
    for args in ((), (None,)):
        e = k.raises(f"create_dev_comm{args}", b.NCCLInvalidUsage, "*", c.create_dev_comm, *args)
        if e is not None and "ncclDevCommCreate is not supported by the host backend" not in str(e):
            k.fail(f"create_dev_comm{args}: {e}")
    # construction rules
    null = E.Communicator()
    k.raises("CommResource(null)", NcclInvalid,
             "Invalid communicator: cannot create resource with communicator ptr=0", E.CommResource, null)
    k.raises("CommResource(object)", TypeError, "*", E.CommResource, object())
    r = E.CommResource(c)
    if not r.is_valid or r.comm is not c:
        k.fail("CommResource(comm)")
    r.close()
    if r.is_valid:
        k.fail("CommResource.close")
    class Sub(E.CommResource):  # a Python subclass keeps the base's rules
        pass

    s = Sub(c)
    s.close()
    s.close()
    if s.is_valid or repr(s) != "<Sub: closed>":
        k.fail(f"subclass: {s!r}")
    for cls in (E.RegisteredBufferHandle, E.RegisteredWindowHandle, E.CustomRedOp):
        k.raises(f"{cls.__name__}()", TypeError, "*", cls)
    # refcount of the buffer: held while registered, released by close
    y = np.zeros(8, np.float32)
    before = sys.getrefcount(y)
    h = c.register_buffer(y)
    held = sys.getrefcount(y)
    h.close()
    del h
    if held != before + 1 or sys.getrefcount(y) != before:
        k.fail(f"register_buffer refcounts {before} -> {held} -> {sys.getrefcount(y)}")
    return k.result()


def bad_input(ctx):
    """Every NcclInvalid of docs/compatibility.md#collectives with its exact message, on every rank (no library call is
    made, so the ranks need not agree), then what the library says about roots and peers."""
    k = Checker(ctx)
    c, rank, n = k.comm, k.rank, k.size
    f32 = np.float32
    z = lambda m, t=f32: np.zeros(m, t)  # noqa: E731
    ro = z(4 * n)
    ro.flags.writeable = False
    R = k.raises
    # dtypes
    R("allreduce dtype", NcclInvalid, "Dtype mismatch: sendbuf has dtype FLOAT32, recvbuf has dtype INT32",
      c.allreduce, z(4), z(4, np.int32), SUM)
    R("allgather dtype", NcclInvalid, "Dtype mismatch: sendbuf has dtype FLOAT16, recvbuf has dtype BFLOAT16",
      c.allgather, z(4, np.float16), z(4 * n, ml_dtypes().bfloat16))
    R("reduce_scatter dtype", NcclInvalid, "Dtype mismatch: sendbuf has dtype INT64, recvbuf has dtype UINT64",
      c.reduce_scatter, z(n, np.int64), z(1, np.uint64), SUM)
    R("alltoall dtype", NcclInvalid, "Dtype mismatch: sendbuf has dtype FLOAT64, recvbuf has dtype FLOAT32",
      c.alltoall, z(n, np.float64), z(n), )
    R("broadcast dtype (root)", NcclInvalid, "Dtype mismatch: sendbuf has dtype INT8, recvbuf has dtype UINT8",
      c.broadcast, z(4, np.int8), z(4, np.uint8), rank)
    R("scatter dtype (root)", NcclInvalid, "Dtype mismatch: sendbuf has dtype INT32, recvbuf has dtype FLOAT32",
      c.scatter, z(n, np.int32), z(1), rank)
    R("gather dtype (root)", NcclInvalid, "Dtype mismatch: sendbuf has dtype FLOAT32, recvbuf has dtype FLOAT64",
      c.gather, z(2), z(2 * n, np.float64), rank)
    R("reduce dtype (root)", NcclInvalid, "Dtype mismatch: sendbuf has dtype FLOAT32, recvbuf has dtype INT8",
      c.reduce, z(2), z(8, np.int8), SUM, rank)
    # counts
    R("allreduce count", NcclInvalid, "Buffer count mismatch: recvbuf must have at least 5 elements, got 4",
      c.allreduce, z(5), z(4), SUM)
    R("reduce count (root)", NcclInvalid, "Buffer count mismatch: recvbuf must have at least 5 elements, got 0",
      c.reduce, z(5), z(0), SUM, rank)
    R("broadcast count (root)", NcclInvalid, "Buffer count mismatch: recvbuf must have exactly 5 elements, got 6",
      c.broadcast, z(5), z(6), rank)
    R("allgather count", NcclInvalid,
      f"Buffer count mismatch: recvbuf must have at least {3 * n} elements (nranks * sendcount), got {3 * n - 1}",
      c.allgather, z(3), z(3 * n - 1))
    R("gather count (root)", NcclInvalid,
      f"Buffer count mismatch: recvbuf must have at least {3 * n} elements (nranks * sendcount), got 2",
      c.gather, z(3), z(2), rank)
    R("reduce_scatter too small", NcclInvalid,
      f"Buffer count mismatch: sendbuf must have at least {n} elements (nranks), got {n - 1}",
      c.reduce_scatter, z(n - 1), z(1), SUM)
    R("reduce_scatter recv", NcclInvalid,
      "Buffer count mismatch: recvbuf must have at least 2 elements (sendcount / nranks), got 1",
      c.reduce_scatter, z(2 * n), z(1), SUM)
    R("alltoall too small", NcclInvalid,
      f"Buffer count mismatch: sendbuf must have at least {n} elements (nranks), got 0",
      c.alltoall, z(0), z(0))
    R("alltoall recv", NcclInvalid,
      f"Buffer count mismatch: recvbuf must have at least {2 * n} elements (nranks * count), got {2 * n - 1}",
      c.alltoall, z(2 * n), z(2 * n - 1))
    R("scatter too small (root)", NcclInvalid,
      f"Buffer count mismatch: sendbuf must have at least {n} elements (nranks), got {n - 1}",
      c.scatter, z(n - 1), z(1), rank)
    R("scatter recv (root)", NcclInvalid,
      "Buffer count mismatch: recvbuf must have exactly 2 elements (sendcount / nranks), got 3",
      c.scatter, z(2 * n), z(3), rank)
    if n > 1:
        R("reduce_scatter multiple", NcclInvalid,
          f"Buffer count mismatch: sendbuf element count {n + 1} is not a multiple of nranks {n}",
          c.reduce_scatter, z(n + 1), z(1), SUM)
        R("alltoall multiple", NcclInvalid,
          f"Buffer count mismatch: sendbuf element count {2 * n + 1} is not a multiple of nranks {n}",
          c.alltoall, z(2 * n + 1), z(4 * n))
        R("scatter multiple (root)", NcclInvalid,
          f"Buffer count mismatch: sendbuf element count {n + 1} is not a multiple of nranks {n}",
          c.scatter, z(n + 1), z(1), rank)
    # read-only recvbuf
    for what, fn, args in [
        ("allreduce", c.allreduce, (z(4), ro[:4], SUM)), ("allreduce in place", c.allreduce, (ro[:4], ro[:4], SUM)),
        ("reduce", c.reduce, (z(4), ro[:4], SUM, rank)), ("broadcast", c.broadcast, (z(4), ro[:4], rank)),
        ("allgather", c.allgather, (z(4), ro)), ("gather", c.gather, (z(4), ro, rank)),
        ("reduce_scatter", c.reduce_scatter, (z(n), ro[:1], SUM)), ("alltoall", c.alltoall, (z(n), ro[:n])),
        ("scatter", c.scatter, (z(n), ro[:1], rank)), ("recv", c.recv, (ro, rank)),
    ]:
        R(f"read-only {what}", NcclInvalid, "recvbuf is read-only (a numpy array whose flags.writeable is False): "
          "pass a writable array, e.g. its copy()", fn, *args)
    # a numpy scalar exports read-only memory: named, with what to pass instead
    R("numpy scalar recvbuf", NcclInvalid, "recvbuf is a numpy scalar (numpy.float32), which cannot be written: "
      "pass an array, e.g. numpy.zeros(1, numpy.float32)", c.allreduce, z(1), f32(0), SUM)
    # read-only sendbuf is fine: allreduce into a writable recvbuf works (checked with a 1-rank-safe call below)
    # overlap rule
    x = z(8 * n)
    R("allreduce overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in allreduce's in-place layout",
      c.allreduce, x[:4], x[1:5], SUM)
    R("reduce overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in reduce's in-place layout",
      c.reduce, x[1:5], x[:4], SUM, rank)
    R("broadcast overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in broadcast's in-place layout",
      c.broadcast, x[:4], x[2:6], rank)
    R("reduce_scatter overlap", NcclInvalid,
      "sendbuf and recvbuf overlap but are not in reduce_scatter's in-place layout",
      c.reduce_scatter, x[:2 * n], x[rank * 2 + 1:rank * 2 + 3], SUM)
    R("allgather overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in allgather's in-place layout",
      c.allgather, x[rank * 2 + 1:rank * 2 + 3], x[:2 * n])
    R("gather overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in gather's in-place layout",
      c.gather, x[rank * 2 + 1:rank * 2 + 3], x[:2 * n], rank)
    R("scatter overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in scatter's in-place layout",
      c.scatter, x[:2 * n], x[rank * 2 + 1:rank * 2 + 3], rank)
    R("alltoall overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in alltoall's in-place layout",
      c.alltoall, x[:2 * n], x[1:2 * n + 1])
    # byte views: overlap is checked on bytes, not on elements
    u8 = x.view(np.uint8)
    R("allreduce overlap (bytes)", NcclInvalid,
      "sendbuf and recvbuf overlap but are not in allreduce's in-place layout",
      c.allreduce, u8[:8], u8[7:15], SUM)
    # only-on-root arguments are not resolved elsewhere (a non-buffer is fine there)
    if n > 1:
        other = (rank + 1) % n
        for what, fn, args in [("reduce", c.reduce, (object(), object(), SUM, other)),
                               ("broadcast", c.broadcast, (object(), object(), other)),
                               ("gather", c.gather, (object(), object(), other)),
                               ("scatter", c.scatter, (object(), object(), other))]:
            # sendbuf of reduce/gather and recvbuf of broadcast/scatter are always resolved
            name = "sendbuf" if what in ("reduce", "gather") else "recvbuf"
            R(f"{what} off-root resolves {name} only", NcclInvalid, f"{name}: *", fn, *args)
    # types and arity
    R("bad op type", TypeError, "*", c.allreduce, z(2), z(2), "sum")
    R("negative op", ValueError, "*", c.allreduce, z(2), z(2), -1)
    R("unknown keyword", TypeError, "allreduce() got an unexpected keyword argument 'root'", c.allreduce, z(2), z(2),
      SUM, root=0)
    R("missing op", TypeError, "*", c.allreduce, z(2), z(2))
    R("stream positional", TypeError, "*", c.allreduce, z(2), z(2), SUM, None)
    R("bad stream", NcclInvalid, "*", c.allreduce, z(2), z(2), SUM, stream="s")
    R("unsupported buffer", NcclInvalid, "sendbuf: *", c.allreduce, object(), z(2), SUM)
    R("unsupported recvbuf", NcclInvalid, "recvbuf: *", c.allreduce, z(2), object(), SUM)
    R("peer type", TypeError, "*", c.send, z(2), "x")
    R("wait_signal bad desc", NcclInvalid, "descs must be WaitSignalDesc objects or a sequence of them, got object",
      c.wait_signal, object())
    R("put_signal bad window", NcclInvalid, "peer_window must be a RegisteredWindowHandle, got int",
      c.put_signal, z(2), 0, 5)
    # null communicator
    null = E.Communicator()
    for name, fn, args in [
        ("allreduce", null.allreduce, (z(2), z(2), SUM)), ("reduce", null.reduce, (z(2), z(2), SUM, 0)),
        ("broadcast", null.broadcast, (z(2), z(2), 0)), ("allgather", null.allgather, (z(2), z(2))),
        ("gather", null.gather, (z(2), z(2), 0)), ("reduce_scatter", null.reduce_scatter, (z(2), z(2), SUM)),
        ("alltoall", null.alltoall, (z(2), z(2))), ("scatter", null.scatter, (z(2), z(2), 0)),
        ("send", null.send, (z(2), 0)), ("recv", null.recv, (z(2), 0)), ("signal", null.signal, (0,)),
        ("wait_signal", null.wait_signal, ([],)), ("put_signal", null.put_signal, (z(2), 0, None)),
        ("allreduce_with_bias", null.allreduce_with_bias, (z(2), z(2), z(2), SUM)),
        ("alltoallv", null.alltoallv, (z(2), z(2), [2], [0], [2], [0])),
        ("register_buffer", null.register_buffer, (z(2),)), ("register_window", null.register_window, (z(2),)),
        ("create_pre_mul_sum", null.create_pre_mul_sum, (1.0,)), ("create_dev_comm", null.create_dev_comm, ()),
    ]:
        R(f"null {name}", NcclInvalid, f"Cannot {name}: Communicator not initialized", fn, *args)
    # roots and peers out of range: named here, before the library sees them
    ranks = f"{n} rank" + ("" if n == 1 else "s")
    for what, fn, args, arg in [("reduce", c.reduce, (z(2), z(2), SUM, n), f"root={n}"),
                                ("reduce", c.reduce, (z(2), z(2), SUM, -1), "root=-1"),
                                ("broadcast", c.broadcast, (z(2), z(2), n), f"root={n}"),
                                ("gather", c.gather, (z(2), z(2 * n), n), f"root={n}"),
                                ("scatter", c.scatter, (z(2 * n), z(2), n), f"root={n}"),
                                ("send", c.send, (z(2), n), f"peer={n}"),
                                ("recv", c.recv, (z(2), -1), "peer=-1")]:
        R(f"{what} {arg}", NcclInvalid, f"{what}: {arg} is out of range for a communicator of {ranks}", fn, *args)
    return k.result()


def refcounts(ctx):
    """10^4 calls leave the arrays' reference counts unchanged, on success and on error paths."""
    k = Checker(ctx)
    c, n = k.comm, k.size
    x, y, ro = np.ones(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32)
    bad = np.zeros(4, np.int32)
    ro.flags.writeable = False
    objs = [x, y, ro, bad, SUM]
    before = [sys.getrefcount(o) for o in objs]
    for _ in range(10000):
        c.allreduce(x, x, SUM)
    for _ in range(2000):
        c.allreduce(x, y, SUM)
        c.allreduce(x, recvbuf=y, op=SUM, stream=None)
    for _ in range(2000):
        for fn, args in ((c.allreduce, (x, bad, SUM)), (c.allreduce, (x, ro, SUM)), (c.allreduce, (x, x[1:], SUM)),
                         (c.reduce_scatter, (x[:n - 1] if n > 1 else x[:0], y, SUM)), (c.allgather, (x, bad))):
            try:
                fn(*args)
            except NcclInvalid:
                pass
    del fn, args  # the loop variables hold the last arguments
    after = [sys.getrefcount(o) for o in objs]
    if before != after:
        k.fail(f"refcounts {before} -> {after}")
    op = c.create_pre_mul_sum(0.5, b.DataType.Float32)
    ob = sys.getrefcount(op), sys.getrefcount(x)
    for _ in range(2000):
        c.allreduce(x, x, op)
        try:
            c.allreduce(bad, bad, op)
        except NcclInvalid:
            pass
    if (sys.getrefcount(op), sys.getrefcount(x)) != ob:
        k.fail(f"custom op refcounts {ob} -> {(sys.getrefcount(op), sys.getrefcount(x))}")
    op.close()
    k.ncalls = 14000
    return k.result()


def lifecycle(ctx):
    """Communicator.init, the context manager (destroy on exit, abort when an exception
    propagates), use after destroy, and destroy closing tracked resources."""
    from nccl.core._unique_id import UniqueId

    uid = UniqueId.from_bytes(ctx.uid)
    failures = []
    with E.Communicator.init(ctx.size, ctx.rank, uid) as c:
        x = np.full(3, ctx.rank + 1, np.float64)
        c.allreduce(x, x, SUM)
        if not np.array_equal(x, np.full(3, ctx.size * (ctx.size + 1) / 2)):
            failures.append(f"allreduce in with: {x}")
        op = c.create_pre_mul_sum(2.0)
        h = c.register_buffer(x)
        c2 = c.split(0, ctx.rank)  # for the abort case below
        op2 = c2.create_pre_mul_sum(1.0)
        c.allreduce(x, x, SUM)  # a barrier: no rank aborts c2 before every rank has made op2
    if c.is_valid or op.is_valid or h.is_valid:
        failures.append(f"after with: comm {c.is_valid}, op {op.is_valid}, handle {h.is_valid}")
    try:
        c.allreduce(x, x, SUM)
        failures.append("use after destroy did not raise")
    except NcclInvalid as e:
        if str(e) != ("Cannot allreduce: Communicator not initialized: it was destroyed (destroy(), or the end of "
                      "its with block); create a new communicator to go on"):
            failures.append(f"use after destroy: {e}")
    c.destroy()  # a no-op now
    try:
        with c2:
            raise KeyError("boom")
    except KeyError:
        pass
    if c2.is_valid or op2.is_valid:
        failures.append("abort on exception left the communicator or its op valid")
    try:
        c2.allreduce(x, x, SUM)
        failures.append("use after abort did not raise")
    except NcclInvalid as e:
        if str(e) != ("Cannot allreduce: Communicator not initialized: it was aborted (abort(), or an exception in "
                      "its with block); create a new communicator to go on"):
            failures.append(f"use after abort: {e}")
    return {"failures": failures, "ncalls": 1}


def _rccl_comm(ctx):
    """A communicator made in the ranks (the launcher's id comes from a process running the host
    backend as NCCL): rank 0 makes the id and hands it over through a file in params["dir"]."""
    import os
    import time
    from pathlib import Path

    path = Path(ctx.params["dir"]) / "uid"
    if ctx.rank == 0:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(bytes(b.get_unique_id()))
        os.replace(tmp, path)
    deadline = time.monotonic() + 30
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("no unique id from rank 0")
        time.sleep(0.01)
    uid = b.UniqueId.from_buffer(bytearray(path.read_bytes()))
    box = b.PointerBox()
    b.comm_init_rank(box.address, ctx.size, uid, ctx.rank)
    return E.Communicator(box.ptr)


def rccl_extensions(ctx):
    """allreduce_with_bias and alltoallv (RCCL entry points; the host backend as RCCL)."""
    k = Checker(ctx, _rccl_comm(ctx))
    try:
        _rccl_checks(k)
    finally:
        k.comm.destroy()
    return k.result()


def _rccl_checks(k):
    """The checks of rccl_extensions on Checker k."""
    c, rank, size = k.comm, k.rank, k.size
    for dt in (np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.float64)):
        for n in (0, 1, 9):
            x = data(dt, n, rank)
            bias = np.arange(n).astype(dt)
            y = np.full(n, 99, dt)
            c.allreduce_with_bias(x, y, bias, SUM)
            want = (reference(dt, n, size, SUM).astype(np.float64) + bias.astype(np.float64)).astype(dt)
            k.same(f"allreduce_with_bias {dt} n={n}", y, want)
            c.allreduce_with_bias(x, x, bias, op=SUM)
            k.same(f"allreduce_with_bias in place {dt} n={n}", x, want)
            k.ncalls += 2
    f = np.dtype(np.float32)
    k.raises("with_bias bias dtype", NcclInvalid, "Dtype mismatch: sendbuf has dtype FLOAT32, bias has dtype INT32",
             c.allreduce_with_bias, np.zeros(2, f), np.zeros(2, f), np.zeros(2, np.int32), SUM)
    k.raises("with_bias bias count", NcclInvalid, "Buffer count mismatch: bias must have at least 3 elements, got 2",
             c.allreduce_with_bias, np.zeros(3, f), np.zeros(3, f), np.zeros(2, f), SUM)

    def cnt(src, dst):
        return (src + 2 * dst) % 3 + 1

    def val(src, dst, m):
        return np.arange(m, dtype=np.float64) + 100 * src + 10 * dst

    for dt in (np.dtype(np.float32), np.dtype(np.int64)):
        sendcounts = [cnt(rank, j) for j in range(size)]
        recvcounts = [cnt(i, rank) for i in range(size)]
        sdispls = list(np.cumsum([0] + sendcounts[:-1]) + 1)  # a gap at the start
        rdispls = list(np.cumsum([0] + recvcounts[:-1]))
        send = np.zeros(sum(sendcounts) + 1, dt)
        for j in range(size):
            send[sdispls[j]:sdispls[j] + sendcounts[j]] = val(rank, j, sendcounts[j])
        recv = np.full(sum(recvcounts), 99, dt)
        c.alltoallv(send, recv, sendcounts, [int(d) for d in sdispls], recvcounts, [int(d) for d in rdispls])
        want = np.concatenate([val(i, rank, recvcounts[i]) for i in range(size)]).astype(dt)
        k.same(f"alltoallv {dt}", recv, want)
        k.ncalls += 1
    k.raises("alltoallv length", NcclInvalid, f"sendcounts must have nranks ({size}) entries, got {size + 1}",
             c.alltoallv, np.zeros(4, f), np.zeros(4, f), [0] * (size + 1), [0] * size, [0] * size, [0] * size)
    k.raises("alltoallv extent", NcclInvalid,
             "Buffer count mismatch: sendbuf must have at least 6 elements (max of sdispls + sendcounts), got 4",
             c.alltoallv, np.zeros(4, f), np.zeros(4, f), [1] * size, [5] * size, [0] * size, [0] * size)
    buf = np.zeros(4 * size, f)
    k.raises("alltoallv overlap", NcclInvalid, "sendbuf and recvbuf overlap but are not in alltoallv's in-place layout",
             c.alltoallv, buf, buf, [1] * size, list(range(size)), [1] * size, list(range(size)))


def gil_release(ctx):
    """While rank 0 waits inside allreduce for a late rank 1, another thread of rank 0 runs
    Python code: the call holds no GIL while it blocks in the library."""
    import threading
    import time

    k = Checker(ctx)
    c = k.comm
    x = np.ones(4, np.float32)
    c.allreduce(x, x, SUM)  # everyone is up
    if ctx.rank == 0:
        ticks, stop = [0], threading.Event()

        def spin():
            while not stop.is_set():
                ticks[0] += 1

        t = threading.Thread(target=spin)
        t.start()
        time.sleep(0.05)
        start = ticks[0]
        t0 = time.monotonic()
        c.allreduce(x, x, SUM)
        waited = time.monotonic() - t0
        during = ticks[0] - start
        stop.set()
        t.join()
        k.ctx.extra["gil"] = {"waited_s": round(waited, 3), "ticks_during_call": during}
        if waited < 0.2 or during < 1000:
            k.fail(f"allreduce waited {waited:.3f} s with {during} ticks of the other thread")
    else:
        time.sleep(0.5)
        c.allreduce(x, x, SUM)
    return k.result()
