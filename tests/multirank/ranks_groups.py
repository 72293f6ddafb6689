"""Rank-side checks of groups, communicator lifecycle, PreMulSum and faults."""

import os
import signal
import time

import numpy as np

import nccl.bindings.nccl as b
import reference as R
from ranks_collectives import Checker, Guarded

DT, OP = R.DT, b.RedOp


def mixed_group(ctx):
    """AllReduce, Broadcast, AllGather, ReduceScatter, Reduce and a send/recv ring in one nested
    group: nothing is touched before the outermost group_end, everything is right after it."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    k = 13
    xa = c.inputs(DT.Float32, k, 1)
    xb = c.inputs(DT.Int32, k, 2)
    xg = c.inputs(DT.Bfloat16, k, 3)
    xs = c.inputs(DT.Float16, n * k, 4)
    xr = c.inputs(DT.Float8e4m3, k, 5)
    xp = c.inputs(DT.Uint64, k, 6)
    ar_s, ar_d = Guarded(DT.Float32, k, xa[r]), Guarded(DT.Float32, k)
    bc = Guarded(DT.Int32, k, xb[r])
    ag_s, ag_d = Guarded(DT.Bfloat16, k, xg[r]), Guarded(DT.Bfloat16, n * k)
    rs_s, rs_d = Guarded(DT.Float16, n * k, xs[r]), Guarded(DT.Float16, k)
    rd = Guarded(DT.Float8e4m3, k, xr[r])
    p_s, p_d = Guarded(DT.Uint64, k, xp[r]), Guarded(DT.Uint64, k)
    outputs = [ar_d, ag_d, rs_d, p_d]
    b.group_start()
    b.group_start()
    c.call(b.all_reduce, ar_s.at(), ar_d.at(), k, DT.Float32, OP.Avg)
    c.call(b.broadcast, bc.at(), bc.at(), k, DT.Int32, n - 1)
    b.group_end()  # inner: only decrements
    c.call(b.recv, p_d.at(), k, DT.Uint64, (r - 1) % n)
    c.call(b.all_gather, ag_s.at(), ag_d.at(), k, DT.Bfloat16)
    c.call(b.reduce_scatter, rs_s.at(), rs_d.at(), k, DT.Float16, OP.Min)
    c.call(b.reduce, rd.at(), rd.at(), k, DT.Float8e4m3, OP.Prod, 0)
    c.call(b.send, p_s.at(), k, DT.Uint64, (r + 1) % n)
    if not all(o.untouched() for o in outputs) or not R.same_bits(bc.body, xb[r]):
        c.fail("a grouped operation ran before the outermost group_end")
    b.group_end()
    c.expect("grouped AllReduce Avg fp32", ar_d.body, R.reduce_ref(xa, OP.Avg, DT.Float32), ar_d)
    c.expect("grouped Broadcast int32", bc.body, xb[n - 1], bc)
    c.expect("grouped AllGather bf16", ag_d.body, np.concatenate(xg), ag_d)
    c.expect("grouped ReduceScatter Min fp16", rs_d.body,
             R.reduce_ref(xs, OP.Min, DT.Float16)[r * k:(r + 1) * k], rs_d)
    c.expect("grouped Reduce Prod e4m3", rd.body,
             R.reduce_ref(xr, OP.Prod, DT.Float8e4m3) if r == 0 else xr[r], rd)
    c.expect("grouped recv", p_d.body, xp[(r - 1) % n], p_d)
    c.digest.update(ar_d.body.tobytes() + ag_d.body.tobytes())
    return c.result()


def p2p_all_pairs(ctx):
    """Every rank sends a different message to every rank (itself included) in one group, posted in
    a rank-dependent order; then two messages per pair across two groups matched in order."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    k = 11

    def msg(src, dst, salt):
        return R.make_input(DT.Int64, k, src * 64 + dst, salt)

    sends = {j: Guarded(DT.Int64, k, msg(r, j, 1)) for j in range(n)}
    recvs = {i: Guarded(DT.Int64, k) for i in range(n)}
    order = list(range(n)) if r % 2 == 0 else list(reversed(range(n)))
    b.group_start()
    for j in order:
        if r % 2:
            c.call(b.recv, recvs[j].at(), k, DT.Int64, j)
            c.call(b.send, sends[j].at(), k, DT.Int64, j)
        else:
            c.call(b.send, sends[j].at(), k, DT.Int64, j)
            c.call(b.recv, recvs[j].at(), k, DT.Int64, j)
    b.group_end()
    for i in range(n):
        c.expect(f"all-pairs recv from {i}", recvs[i].body, msg(i, r, 1), recvs[i])
    if n == 1:  # self send/recv must pair up inside one group; the rest needs a peer
        return c.result()
    # k-th send matches k-th recv per ordered pair, whatever the group boundaries
    nxt, prv = (r + 1) % n, (r - 1) % n
    s1, s2 = Guarded(DT.Int64, k, msg(r, nxt, 2)), Guarded(DT.Int64, k, msg(r, nxt, 3))
    d1, d2 = Guarded(DT.Int64, k), Guarded(DT.Int64, k)
    if r % 2 == 0:
        b.group_start()
        c.call(b.send, s1.at(), k, DT.Int64, nxt)
        c.call(b.send, s2.at(), k, DT.Int64, nxt)
        c.call(b.recv, d1.at(), k, DT.Int64, prv)
        b.group_end()
        b.group_start()
        c.call(b.recv, d2.at(), k, DT.Int64, prv)
        b.group_end()
    else:
        b.group_start()
        c.call(b.recv, d1.at(), k, DT.Int64, prv)
        c.call(b.send, s1.at(), k, DT.Int64, nxt)
        b.group_end()
        b.group_start()
        c.call(b.recv, d2.at(), k, DT.Int64, prv)
        c.call(b.send, s2.at(), k, DT.Int64, nxt)
        b.group_end()
    c.expect("first message of the pair", d1.body, msg(prv, r, 2), d1)
    c.expect("second message of the pair", d2.body, msg(prv, r, 3), d2)
    return c.result()


def group_error_discards(ctx):
    """A bad call inside a group raises, the outermost group_end raises too and runs nothing;
    the communicator stays usable."""
    c = Checker(ctx)
    k = 5
    x = R.make_input(DT.Float32, k, c.rank, 9)
    d = Guarded(DT.Float32, k)
    b.group_start()
    b.all_reduce(x.ctypes.data, d.at(), k, DT.Float32, OP.Sum, c.comm, 0)
    try:
        b.broadcast(x.ctypes.data, d.at(), k, DT.Float32, c.size, c.comm, 0)
        c.fail("root == nranks inside a group did not raise")
    except b.NCCLInvalidArgument:
        pass
    try:
        b.group_end()
        c.fail("group_end after a failed call in the group did not raise")
    except b.NCCLError:
        pass
    if not d.untouched():
        c.fail("a discarded group executed an operation")
    b.all_reduce(x.ctypes.data, d.at(), k, DT.Float32, OP.Sum, c.comm, 0)
    xs = c.inputs(DT.Float32, k, 9)
    c.expect("AllReduce after a discarded group", d.body, R.reduce_ref(xs, OP.Sum, DT.Float32), d)
    return c.result()


def init_all_one_thread(ctx):
    """ncclCommInitAll with ndev communicators in this process, driven by one thread in groups."""
    ndev = ctx.params["ndev"]
    failures = []
    comms = list(b.comm_init_all(ndev, None))
    try:
        if [b.comm_user_rank(x) for x in comms] != list(range(ndev)):
            failures.append("user ranks are not 0..ndev-1")
        if {b.comm_count(x) for x in comms} != {ndev}:
            failures.append("comm_count is not ndev")
        k = 9
        for dt, op in ((DT.Float32, OP.Sum), (DT.Bfloat16, OP.Avg), (DT.Int8, OP.Prod)):
            xs = [R.make_input(dt, k, i, 3) for i in range(ndev)]
            outs = [np.zeros(k, R.NP_TYPES[dt]) for _ in range(ndev)]
            b.group_start()
            for i, cm in enumerate(comms):
                b.all_reduce(xs[i].ctypes.data, outs[i].ctypes.data, k, dt, op, cm, 0)
            b.group_end()
            want = R.reduce_ref(xs, op, dt)
            for i in range(ndev):
                if not R.same_bits(outs[i], want):
                    failures.append(f"comm {i} {R.DT(dt).name} {OP(op).name}: {outs[i]} != {want}")
        # a ring of send/recv between the communicators, plus an AllGather, all in one group
        xs = [R.make_input(DT.Uint32, k, i, 4) for i in range(ndev)]
        got = [np.zeros(k, np.uint32) for _ in range(ndev)]
        gat = [np.zeros(ndev * k, np.uint32) for _ in range(ndev)]
        b.group_start()
        for i, cm in enumerate(comms):
            b.send(xs[i].ctypes.data, k, DT.Uint32, (i + 1) % ndev, cm, 0)
            b.recv(got[i].ctypes.data, k, DT.Uint32, (i - 1) % ndev, cm, 0)
            b.all_gather(xs[i].ctypes.data, gat[i].ctypes.data, k, DT.Uint32, cm, 0)
        b.group_end()
        for i in range(ndev):
            if not R.same_bits(got[i], xs[(i - 1) % ndev]):
                failures.append(f"comm {i}: ring message wrong")
            if not R.same_bits(gat[i], np.concatenate(xs)):
                failures.append(f"comm {i}: grouped AllGather wrong")
    finally:
        for cm in comms:  # a plain loop, no group
            b.comm_destroy(cm)
    return {"failures": failures}


def _split(comm, color, key):
    box = b.PointerBox()
    b.comm_split(comm, color, key, box.address, 0)
    return box.ptr


def split(ctx):
    """comm_split by colour with reversed keys, by key ties (parent order), and NOCOLOR."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    # colour r % 2, key -r: members of a colour in descending parent rank
    child = _split(c.comm, r % 2, -r)
    members = sorted([p for p in range(n) if p % 2 == r % 2], reverse=True)
    try:
        if b.comm_count(child) != len(members):
            c.fail(f"colour split: count {b.comm_count(child)} != {len(members)}")
        if b.comm_user_rank(child) != members.index(r):
            c.fail(f"colour split: rank {b.comm_user_rank(child)} != {members.index(r)}")
        mine = np.array([r], np.int32)
        got = np.full(len(members), -1, np.int32)
        b.all_gather(mine.ctypes.data, got.ctypes.data, 1, DT.Int32, child, 0)
        if list(got) != members:
            c.fail(f"colour split: members by child rank {list(got)} != {members}")
    finally:
        b.comm_destroy(child)
    # one colour, equal keys: parent order; the last rank opts out with NOCOLOR (n > 1)
    out = n > 1 and r == n - 1
    child = _split(c.comm, b.NCCL_SPLIT_NOCOLOR if out else 7, 0)
    if out:
        if child != 0:
            c.fail(f"NCCL_SPLIT_NOCOLOR gave comm {child:#x}, not NULL")
            b.comm_destroy(child)
    else:
        try:
            m = n - 1 if n > 1 else 1
            if (b.comm_count(child), b.comm_user_rank(child)) != (m, r):
                c.fail(f"tie split: (count, rank) = {(b.comm_count(child), b.comm_user_rank(child))}")
            x = np.array([r + 1.0], np.float64)
            b.all_reduce(x.ctypes.data, x.ctypes.data, 1, DT.Float64, OP.Sum, child, 0)
            if x[0] != m * (m + 1) / 2:
                c.fail(f"tie split: AllReduce gave {x[0]}")
        finally:
            b.comm_destroy(child)
    # the parent stays usable
    x = np.array([r], np.int64)
    b.all_reduce(x.ctypes.data, x.ctypes.data, 1, DT.Int64, OP.Sum, c.comm, 0)
    if x[0] != n * (n - 1) // 2:
        c.fail(f"parent AllReduce after split gave {x[0]}")
    return c.result()


def _scalar(dt, r):
    if R.is_int(dt):
        return np.array([r + 2], R.NP_TYPES[dt])
    return R.to_type(np.float32([0.5 * (r + 1) + 0.125]), dt)


def premulsum(ctx):
    """PreMulSum with a different scalar on every rank, every datatype, host-immediate scalars
    (copied at creation) and device scalars (read when the collective executes)."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    k = 17
    for dt in R.ALL_TYPES:
        name = R.DT(dt).name
        xs = c.inputs(dt, k, 31)
        scalars = [_scalar(dt, i) for i in range(n)]
        want = R.premulsum_ref(xs, scalars, dt)
        # host immediate: changing the scalar after creation has no effect
        sc = scalars[r].copy()
        op = b.red_op_create_pre_mul_sum(sc.ctypes.data, dt, b.ScalarResidence.HostImmediate, c.comm)
        sc[:] = _scalar(dt, r + 5)
        s, d = Guarded(dt, k, xs[r]), Guarded(dt, k)
        c.call(b.all_reduce, s.at(), d.at(), k, dt, op)
        c.expect(f"PreMulSum host scalar AllReduce {name}", d.body, want, d)
        c.digest.update(d.body.tobytes())
        big = c.inputs(dt, n * k, 32)
        wantb = R.premulsum_ref(big, scalars, dt)
        rs = Guarded(dt, k)
        s = Guarded(dt, n * k, big[r])
        c.call(b.reduce_scatter, s.at(), rs.at(), k, dt, op)
        c.expect(f"PreMulSum ReduceScatter {name}", rs.body, wantb[r * k:(r + 1) * k], rs)
        b.red_op_destroy(op, c.comm)
        # device residence: the value at execution (the outermost group_end) counts
        dev = _scalar(dt, r + 9)
        op = b.red_op_create_pre_mul_sum(dev.ctypes.data, dt, b.ScalarResidence.Device, c.comm)
        ip = Guarded(dt, k, xs[r])
        b.group_start()
        c.call(b.reduce, ip.at(), ip.at(), k, dt, op, n - 1)
        b.red_op_destroy(op, c.comm)  # allowed once the call has returned
        dev[:] = scalars[r]
        b.group_end()
        c.expect(f"PreMulSum device scalar Reduce {name}", ip.body, want if r == n - 1 else xs[r], ip)
    return c.result()


def mismatch(ctx):
    """Different counts / datatypes / ops / roots across ranks: NCCLInvalidUsage on every rank.
    Each mismatch gets its own child communicator, since a mismatch leaves a comm in ERROR."""
    r = ctx.rank
    out = {}
    x = np.zeros(64, np.float32)
    y = np.zeros(8 * ctx.size, np.float32)
    calls = {
        "count": lambda cm: b.all_reduce(x.ctypes.data, x.ctypes.data, 8 + r, DT.Float32, OP.Sum, cm, 0),
        "datatype": lambda cm: b.all_reduce(x.ctypes.data, x.ctypes.data, 8,
                                            DT.Float32 if r == 0 else DT.Int32, OP.Sum, cm, 0),
        "op": lambda cm: b.all_reduce(x.ctypes.data, x.ctypes.data, 8, DT.Float32,
                                      OP.Sum if r == 0 else OP.Max, cm, 0),
        "root": lambda cm: b.broadcast(x.ctypes.data, x.ctypes.data, 8, DT.Float32, r, cm, 0),
        # a count-0 call takes part in the checks: the mismatch is reported at this call
        "zero count": lambda cm: b.all_reduce(x.ctypes.data, x.ctypes.data, 0 if r == 0 else 8, DT.Float32,
                                              OP.Sum, cm, 0),
        "zero count (all but the last)": lambda cm: b.all_gather(x.ctypes.data, y.ctypes.data,
                                                                 8 if r == ctx.size - 1 else 0, DT.Float32, cm, 0),
        "kind": lambda cm: (b.all_reduce(x.ctypes.data, x.ctypes.data, 8, DT.Float32, OP.Sum, cm, 0)
                            if r == 0 else
                            b.broadcast(x.ctypes.data, x.ctypes.data, 8, DT.Float32, 0, cm, 0)),
    }
    for what, call in calls.items():
        child = _split(ctx.comm, 0, r)
        t0 = time.monotonic()
        out[what] = {"type": None, "at": "same call"}
        try:
            call(child)
            if what == "root":
                # Every rank names itself root: a root that returns before its peers arrive (the
                # eager Broadcast) reports the mismatch at its next call on the communicator.
                out[what]["at"] = "next call"
                b.all_reduce(x.ctypes.data, x.ctypes.data, 8, DT.Float32, OP.Sum, child, 0)
        except b.NCCLError as exc:
            out[what].update({"type": type(exc).__name__, "status": int(exc.status), "msg": str(exc)})
        out[what]["elapsed"] = time.monotonic() - t0
        b.comm_destroy(child)
    return out


def _call(fn):
    """fn()'s outcome: {"type": None} or the NCCLError's type name and text."""
    try:
        fn()
        return {"type": None}
    except b.NCCLError as exc:
        return {"type": type(exc).__name__, "msg": str(exc)}


def eager_broadcast(ctx):
    """The root of a Broadcast on a child communicator returns, overwrites its buffer, and only
    then (an AllReduce on the parent orders it) do the other ranks enter their Broadcast: they
    must still receive the original data. Then a Broadcast in which the last rank's count is one
    short: that rank reports the mismatch at this call, the root at its next call on the child
    (an AllReduce, or a Send under params["next"] == "send"), and any other rank, whose call
    matched the root's, at this call or its next."""
    r, n = ctx.rank, ctx.size
    child = _split(ctx.comm, 0, r)
    one = np.ones(1, np.float32)
    want = np.arange(1000, dtype=np.float32)
    x = want.copy() if r == 0 else np.zeros(1000, np.float32)

    def bcast(count):
        b.broadcast(x.ctypes.data, x.ctypes.data, count, DT.Float32, 0, child, 0)

    def parent_barrier():
        b.all_reduce(one.ctypes.data, one.ctypes.data, 1, DT.Float32, OP.Sum, ctx.comm, 0)

    def next_call():
        if r == 0 and ctx.params.get("next") == "send":  # a task without a collective reports it too
            b.send(one.ctypes.data, 1, DT.Float32, 1, child, 0)
        else:
            b.all_reduce(one.ctypes.data, one.ctypes.data, 1, DT.Float32, OP.Sum, child, 0)

    out = {}
    if r == 0:
        bcast(1000)
        x[:] = -1
        parent_barrier()
    else:
        parent_barrier()
        bcast(1000)
        out["data_ok"] = bool((x == want).all())
    count = 999 if r == n - 1 else 1000
    if r == 0:
        out["call"] = _call(lambda: bcast(count))
        parent_barrier()
    else:
        parent_barrier()
        out["call"] = _call(lambda: bcast(count))
    if out["call"]["type"] is None:
        out["next"] = _call(next_call)
    b.comm_destroy(child)
    return out


def eager_root_leaves(ctx):
    """The root of an eager Broadcast leaves the communicator (params["leave"]: "finalize" =
    finalize then destroy, "destroy" = destroy alone) right after it returns. Rank 1 comes 0.5 s
    late to the Broadcast before it, from rank 0, which rank 0 (its eager root) settles at the
    start of the next one, waiting for rank 1 while the last root may already have left: no
    peer's call needs anything of the departed root that it did not publish, so none fails
    (docs/host-backend.md#what-a-departure-means-for-a-peers-call)."""
    r, n = ctx.rank, ctx.size
    child = _split(ctx.comm, 0, r)
    want = [np.arange(100, dtype=np.float32) * (root + 2) for root in (0, n - 1)]
    out = {"data_ok": True}
    for i, root in enumerate((0, n - 1)):
        x = want[i].copy() if r == root else np.zeros(100, np.float32)
        if r == 1 and root == 0:
            time.sleep(0.5)
        out[f"bcast{root}"] = _call(lambda: b.broadcast(x.ctypes.data, x.ctypes.data, x.size, DT.Float32, root,
                                                        child, 0))
        out["data_ok"] &= bool((x == want[i]).all())
    if r == n - 1 and ctx.params["leave"] == "finalize":
        out["finalize"] = _call(lambda: b.comm_finalize(child))
    out["destroy"] = _call(lambda: b.comm_destroy(child))
    return out


def eager_root_peer_killed(ctx):
    """The last rank dies (SIGKILL) before it enters a Broadcast from rank 0: the root returns from
    its Broadcast (it waits for nobody), and its next call, which first checks every peer's
    descriptor of that Broadcast, raises; so does the next call of a rank that received."""
    n, r = ctx.size, ctx.rank
    x = np.arange(100, dtype=np.float32) if r == 0 else np.zeros(100, np.float32)
    b.all_reduce(x.ctypes.data, x.ctypes.data, 1, DT.Float32, OP.Sum, ctx.comm, 0)  # everyone is up
    if r == n - 1:
        os.kill(os.getpid(), signal.SIGKILL)
    res = {"bcast": _call(lambda: b.broadcast(x.ctypes.data, x.ctypes.data, x.size, DT.Float32, 0, ctx.comm, 0))}
    t0 = time.monotonic()
    res["next"] = _call(lambda: b.all_reduce(x.ctypes.data, x.ctypes.data, 1, DT.Float32, OP.Sum, ctx.comm, 0))
    res["elapsed"] = time.monotonic() - t0
    c, ctx.comm = ctx.comm, None
    b.comm_abort(c)
    return res


def killed_peer(ctx):
    """The last rank dies (SIGKILL) after one good AllReduce; the others' next AllReduce raises."""
    n, r = ctx.size, ctx.rank
    x = np.ones(1000, np.float32)
    b.all_reduce(x.ctypes.data, x.ctypes.data, x.size, DT.Float32, OP.Sum, ctx.comm, 0)
    if r == n - 1:
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    res = {"type": None}
    try:
        b.all_reduce(x.ctypes.data, x.ctypes.data, x.size, DT.Float32, OP.Sum, ctx.comm, 0)
    except b.NCCLError as exc:
        res = {"type": type(exc).__name__, "status": int(exc.status), "msg": str(exc)}
    res["elapsed"] = time.monotonic() - t0
    c, ctx.comm = ctx.comm, None
    b.comm_abort(c)
    return res


def missing_rank(ctx):
    """The last rank never calls the collective: the others raise NCCLTimeout at the deadline."""
    n, r = ctx.size, ctx.rank
    x = np.ones(4, np.float64)
    res = {"type": None}
    if r != n - 1:
        t0 = time.monotonic()
        try:
            b.all_reduce(x.ctypes.data, x.ctypes.data, 4, DT.Float64, OP.Sum, ctx.comm, 0)
        except b.NCCLError as exc:
            res = {"type": type(exc).__name__, "status": int(exc.status), "msg": str(exc)}
        res["elapsed"] = time.monotonic() - t0
        time.sleep(1.0)  # the other waiters time out too before this abort reaches them
    else:
        time.sleep(ctx.params["sleep"])  # past the others' deadline, then leave
    c, ctx.comm = ctx.comm, None
    b.comm_abort(c)
    return res


def _err(exc, t0):
    return {"type": type(exc).__name__, "status": int(exc.status), "msg": str(exc),
            "elapsed": time.monotonic() - t0}


def abort_from_thread(ctx):
    """The last rank never joins an AllReduce; rank 0's stuck call is unblocked by comm_abort from
    another thread, and the other waiting ranks then fail at once."""
    import threading

    n, r = ctx.size, ctx.rank
    comm, ctx.comm = ctx.comm, None
    x = np.ones(8, np.float32)
    res = {"type": None}
    if r == n - 1:
        time.sleep(ctx.params["hold"])
        b.comm_abort(comm)
        return res
    if r == 0:
        threading.Timer(0.5, b.comm_abort, args=(comm,)).start()
    t0 = time.monotonic()
    try:
        b.all_reduce(x.ctypes.data, x.ctypes.data, 8, DT.Float32, OP.Sum, comm, 0)
        res["elapsed"] = time.monotonic() - t0
    except b.NCCLError as exc:
        res = _err(exc, t0)
    if r != 0:
        b.comm_abort(comm)
    return res


def shrink(ctx):
    """The last rank leaves: the survivors shrink it away (default mode) and use the child; then
    rank n-1 of the child is killed and the rest shrink again with NCCL_SHRINK_ABORT."""
    n, r = ctx.size, ctx.rank
    failures = []
    if r == n - 1:
        return {"failures": failures}
    box = b.PointerBox()
    b.comm_shrink(ctx.comm, [n - 1], 1, box.address, 0, b.NCCL_SHRINK_DEFAULT)
    child = box.ptr
    m = n - 1
    if (b.comm_count(child), b.comm_user_rank(child)) != (m, r):
        failures.append(f"shrink: (count, rank) = {(b.comm_count(child), b.comm_user_rank(child))}")
    x = np.array([r + 1], np.int32)
    b.all_reduce(x.ctypes.data, x.ctypes.data, 1, DT.Int32, OP.Sum, child, 0)
    if x[0] != m * (m + 1) // 2:
        failures.append(f"shrunk AllReduce gave {x[0]}")
    if m >= 2:
        if r == m - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        t0 = time.monotonic()
        try:
            b.all_reduce(x.ctypes.data, x.ctypes.data, 1, DT.Int32, OP.Sum, child, 0)
            failures.append("AllReduce with a dead peer succeeded")
        except b.NCCLError as exc:
            if time.monotonic() - t0 > 10:
                failures.append(f"dead peer noticed after {time.monotonic() - t0:.1f} s")
            if not isinstance(exc, b.NCCLRemoteError):
                failures.append(f"dead peer gave {exc!r}")
        box2 = b.PointerBox()
        b.comm_shrink(child, [m - 1], 1, box2.address, 0, b.NCCL_SHRINK_ABORT)
        grand = box2.ptr
        y = np.array([2.0 * r], np.float64)
        b.all_reduce(y.ctypes.data, y.ctypes.data, 1, DT.Float64, OP.Sum, grand, 0)
        if y[0] != sum(2.0 * i for i in range(m - 1)):
            failures.append(f"AllReduce after SHRINK_ABORT gave {y[0]}")
        b.comm_destroy(grand)
        b.comm_abort(child)
    else:
        b.comm_destroy(child)
    return {"failures": failures}


def nonblocking_init(ctx):
    """blocking = 0: init returns at once (success or in progress); poll the async state."""
    cfg = b.Config()
    cfg.blocking = 0
    box = b.PointerBox()
    b.comm_init_rank_config(box.address, ctx.size, ctx.uid, ctx.rank, cfg.ptr)
    comm = box.ptr
    deadline = time.monotonic() + 20
    states = []
    while True:
        st = int(b.comm_get_async_error(comm))
        states.append(st)
        if st != int(b.Result.InProgress) or time.monotonic() > deadline:
            break
        time.sleep(0.001)
    failures = [] if st == 0 else [f"rank {ctx.rank}: nonblocking init ended in state {st}"]
    if st == 0:
        x = np.array([ctx.rank + 1.0], np.float32)
        b.all_reduce(x.ctypes.data, x.ctypes.data, 1, DT.Float32, OP.Sum, comm, 0)
        while int(b.comm_get_async_error(comm)) == int(b.Result.InProgress):
            time.sleep(0.001)
        n = ctx.size
        if x[0] != n * (n + 1) / 2:
            failures.append(f"rank {ctx.rank}: AllReduce on the nonblocking comm gave {x[0]}")
    b.comm_destroy(comm)
    return {"failures": failures, "in_progress_seen": int(b.Result.InProgress) in states}


def bad_arguments(ctx):
    """Argument errors raise the docs/host-backend.md#argument-checks code on the calling rank, touch no
    buffer and consume no sequence number: a good AllReduce afterwards still lines up."""
    n, r = ctx.size, ctx.rank
    comm = ctx.comm
    failures = []
    x = Guarded(DT.Float32, 8, np.ones(8, np.float32))
    y = Guarded(DT.Float32, 8 * n)
    IA, IU = b.NCCLInvalidArgument, b.NCCLInvalidUsage

    def expect(what, exc, fn, *args):
        try:
            fn(*args)
            failures.append(f"rank {r}: {what} did not raise")
        except exc:
            pass
        except b.NCCLError as e:
            failures.append(f"rank {r}: {what} raised {type(e).__name__}, not {exc.__name__}")
        if not y.untouched():
            failures.append(f"rank {r}: {what} wrote to a buffer")
            y.raw.view(np.uint8)[:] = 0xA5

    expect("root == nranks", IA, b.broadcast, x.at(), y.at(), 8, DT.Float32, n, comm, 0)
    expect("negative root", IA, b.reduce, x.at(), y.at(), 8, DT.Float32, OP.Sum, -1, comm, 0)
    expect("NULL recv, count > 0", IA, b.all_reduce, x.at(), 0, 8, DT.Float32, OP.Sum, comm, 0)
    expect("NULL send, count > 0", IA, b.all_gather, 0, y.at(), 8, DT.Float32, comm, 0)
    expect("partial overlap", IA, b.all_reduce, y.at(), y.at(1), 4, DT.Float32, OP.Sum, comm, 0)
    expect("AlltoAll in place", IA, b.allto_all, y.at(), y.at(), 8, DT.Float32, comm, 0)
    expect("peer == nranks", IA, b.send, x.at(), 8, DT.Float32, n, comm, 0)
    expect("unknown user op", IA, b.all_reduce, x.at(), y.at(), 8, DT.Float32, 1000, comm, 0)
    expect("group_end outside a group", IU, b.group_end)
    sc = np.array([2.0], np.float32)
    op = b.red_op_create_pre_mul_sum(sc.ctypes.data, DT.Float32, b.ScalarResidence.HostImmediate, comm)
    expect("PreMulSum op with another datatype", IA, b.all_reduce, x.at(), y.at(), 8, DT.Float64, op,
           comm, 0)
    child = _split(comm, 0, r)
    expect("another comm's op", IA, b.all_reduce, x.at(), y.at(), 8, DT.Float32, op, child, 0)
    b.comm_destroy(child)
    b.red_op_destroy(op, comm)
    expect("destroyed op", IA, b.all_reduce, x.at(), y.at(), 8, DT.Float32, op, comm, 0)
    expect("destroying a built-in op", IA, b.red_op_destroy, int(OP.Sum), comm)
    # zero-length send/recv is a real message that must be matched (not dropped)
    b.group_start()
    b.send(0, 0, DT.Float32, (r + 1) % n, comm, 0)
    b.recv(0, 0, DT.Float32, (r - 1) % n, comm, 0)
    b.group_end()
    b.all_reduce(x.at(), y.at(), 8, DT.Float32, OP.Sum, comm, 0)
    if not (y.body[:8] == n).all():
        failures.append(f"rank {r}: AllReduce after the bad calls gave {y.body[:8]}")
    return {"failures": failures}
