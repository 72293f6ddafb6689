"""Rank-side checks of every collective x datatype x op against reference.py.

Each rank derives every rank's input from (datatype, count, rank, salt), so it can compute the
expected result of any collective locally.  Buffers carry guard elements on both sides that must
come back untouched (the backend writes only inside the ranges of
docs/host-backend.md#which-bytes-each-call-reads-and-writes).
A check returns {"failures": [...], "digest": ...}; the digest covers outputs that must be
bit-identical on every rank (AllReduce, Broadcast, AllGather).
"""

import hashlib

import numpy as np

import nccl.bindings.nccl as b
import reference as R

DT, OP = R.DT, b.RedOp

GUARD = 3
SENTINEL = 0xA5
MAX_FAILURES = 40


class Guarded:
    """count elements of dt with GUARD sentinel elements on each side."""

    def __init__(self, dt, count, fill=None):
        t = R.NP_TYPES[dt]
        self.t, self.count = t, count
        self.raw = np.empty(count + 2 * GUARD, dtype=t)
        self.raw.view(np.uint8)[:] = SENTINEL
        if fill is not None:
            self.body[:] = fill

    @property
    def body(self):
        return self.raw[GUARD:GUARD + self.count]

    def at(self, elem=0):
        return self.raw.ctypes.data + (GUARD + elem) * self.t.itemsize

    def guards_ok(self):
        u = self.raw.view(np.uint8)
        g = GUARD * self.t.itemsize
        return bool((u[:g] == SENTINEL).all() and (u[len(u) - g:] == SENTINEL).all())

    def untouched(self):
        return bool((self.raw.view(np.uint8) == SENTINEL).all())


class Checker:
    def __init__(self, ctx):
        self.ctx, self.rank, self.size, self.comm = ctx, ctx.rank, ctx.size, ctx.comm
        self.failures, self.ncalls = [], 0
        self.digest = hashlib.sha256()

    def fail(self, what):
        if len(self.failures) < MAX_FAILURES:
            self.failures.append(f"rank {self.rank}/{self.size}: {what}")

    def expect(self, what, got, want, buf=None):
        if buf is not None and not buf.guards_ok():
            self.fail(f"{what}: wrote outside the buffer")
        if not R.same_bits(got, want):
            self.fail(f"{what}: got {np.asarray(got)[:8]!r} want {np.asarray(want)[:8]!r}")

    def result(self):
        return {"failures": self.failures, "digest": self.digest.hexdigest(), "ncalls": self.ncalls}

    def call(self, fn, *args):
        self.ncalls += 1
        fn(*args, self.comm, 0)

    def inputs(self, dt, count, salt):
        return [R.make_input(dt, count, r, salt) for r in range(self.size)]


def _name(dt):
    return R.DT(dt).name


def _counts(ctx):
    return tuple((ctx.params or {}).get("counts", (0, 1, 37)))


def reductions(ctx):
    """AllReduce, Reduce (roots 0 and n-1) and ReduceScatter: every type x op, in and out of
    place, the configured counts (0 with NULL buffers)."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    roots = sorted({0, n - 1})
    for dt in R.ALL_TYPES:
        for op in R.OPS:
            for count in _counts(ctx):
                salt = int(op) * 7 + 1
                xs = c.inputs(dt, count, salt)
                want = R.reduce_ref(xs, op, dt)
                tag = f"{_name(dt)} {R.b.RedOp(op).name} count={count}"
                if count == 0:
                    c.call(b.all_reduce, 0, 0, 0, dt, op)
                    c.call(b.reduce, 0, 0, 0, dt, op, 0)
                    c.call(b.reduce_scatter, 0, 0, 0, dt, op)
                    continue
                # AllReduce out of place / in place
                s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
                c.call(b.all_reduce, s.at(), d.at(), count, dt, op)
                c.expect(f"AllReduce {tag}", d.body, want, d)
                c.expect(f"AllReduce {tag} send buffer", s.body, xs[r], s)
                c.digest.update(d.body.tobytes())
                ip = Guarded(dt, count, xs[r])
                c.call(b.all_reduce, ip.at(), ip.at(), count, dt, op)
                c.expect(f"AllReduce in place {tag}", ip.body, want, ip)
                # Reduce
                for root in roots:
                    s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
                    null_off_root = root == 0 and r != root
                    c.call(b.reduce, s.at(), 0 if null_off_root else d.at(), count, dt, op, root)
                    if r == root:
                        c.expect(f"Reduce root={root} {tag}", d.body, want, d)
                    elif not d.untouched():
                        c.fail(f"Reduce root={root} {tag}: wrote recv off root")
                    ip = Guarded(dt, count, xs[r])
                    c.call(b.reduce, ip.at(), ip.at(), count, dt, op, root)
                    c.expect(f"Reduce in place root={root} {tag}", ip.body, want if r == root else xs[r], ip)
                # ReduceScatter: recvcount = count, send n*count
                big = c.inputs(dt, n * count, salt + 1)
                wantb = R.reduce_ref(big, op, dt)[r * count:(r + 1) * count]
                s, d = Guarded(dt, n * count, big[r]), Guarded(dt, count)
                c.call(b.reduce_scatter, s.at(), d.at(), count, dt, op)
                c.expect(f"ReduceScatter {tag}", d.body, wantb, d)
                ip = Guarded(dt, n * count, big[r])
                c.call(b.reduce_scatter, ip.at(), ip.at(r * count), count, dt, op)
                other = np.concatenate([big[r][:r * count], wantb, big[r][(r + 1) * count:]])
                c.expect(f"ReduceScatter in place {tag}", ip.body, other, ip)
    return c.result()


def data_movement(ctx):
    """Broadcast, Bcast, AllGather, AlltoAll, Gather, Scatter and send/recv rings: every type,
    roots 0 and n-1, in and out of place, the configured counts."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    roots = sorted({0, n - 1})
    for dt in R.ALL_TYPES:
        for count in _counts(ctx):
            tag = f"{_name(dt)} count={count}"
            xs = c.inputs(dt, count, 101)
            big = c.inputs(dt, n * count, 102)
            if count == 0:
                c.call(b.broadcast, 0, 0, 0, dt, 0)
                c.call(b.bcast, 0, 0, dt, n - 1)
                c.call(b.all_gather, 0, 0, 0, dt)
                c.call(b.allto_all, 0, 0, 0, dt)
                c.call(b.gather, 0, 0, 0, dt, 0)
                c.call(b.scatter, 0, 0, 0, dt, n - 1)
            else:
                for root in roots:
                    rt = f"{tag} root={root}"
                    null_off_root = root == 0 and r != root
                    # Broadcast
                    s = Guarded(dt, count, xs[r])
                    d = Guarded(dt, count)
                    c.call(b.broadcast, 0 if null_off_root else s.at(), d.at(), count, dt, root)
                    c.expect(f"Broadcast {rt}", d.body, xs[root], d)
                    c.digest.update(d.body.tobytes())
                    ip = Guarded(dt, count, xs[r])
                    c.call(b.broadcast, ip.at(), ip.at(), count, dt, root)
                    c.expect(f"Broadcast in place {rt}", ip.body, xs[root], ip)
                    # Bcast (always in place)
                    ip = Guarded(dt, count, xs[r])
                    c.call(b.bcast, ip.at(), count, dt, root)
                    c.expect(f"Bcast {rt}", ip.body, xs[root], ip)
                    # Gather: recv n*count at root
                    want = np.concatenate(xs)
                    s = Guarded(dt, count, xs[r])
                    d = Guarded(dt, n * count)
                    c.call(b.gather, s.at(), 0 if null_off_root else d.at(), count, dt, root)
                    if r == root:
                        c.expect(f"Gather {rt}", d.body, want, d)
                    elif not d.untouched():
                        c.fail(f"Gather {rt}: wrote recv off root")
                    if r == root:
                        ip = Guarded(dt, n * count)
                        ip.body[root * count:(root + 1) * count] = xs[r]
                        c.call(b.gather, ip.at(root * count), ip.at(), count, dt, root)
                        c.expect(f"Gather in place {rt}", ip.body, want, ip)
                    else:
                        s = Guarded(dt, count, xs[r])
                        c.call(b.gather, s.at(), 0, count, dt, root)
                    # Scatter: send n*count at root (big[root] is the root's send buffer)
                    s = Guarded(dt, n * count, big[r])
                    d = Guarded(dt, count)
                    c.call(b.scatter, 0 if null_off_root else s.at(), d.at(), count, dt, root)
                    c.expect(f"Scatter {rt}", d.body, big[root][r * count:(r + 1) * count], d)
                    if r == root:
                        ip = Guarded(dt, n * count, big[r])
                        c.call(b.scatter, ip.at(), ip.at(root * count), count, dt, root)
                        c.expect(f"Scatter in place {rt}", ip.body, big[r], ip)
                    else:
                        d = Guarded(dt, count)
                        c.call(b.scatter, 0, d.at(), count, dt, root)
                        c.expect(f"Scatter (in-place root) {rt}", d.body,
                                 big[root][r * count:(r + 1) * count], d)
                # AllGather
                want = np.concatenate(xs)
                s, d = Guarded(dt, count, xs[r]), Guarded(dt, n * count)
                c.call(b.all_gather, s.at(), d.at(), count, dt)
                c.expect(f"AllGather {tag}", d.body, want, d)
                c.digest.update(d.body.tobytes())
                ip = Guarded(dt, n * count)
                ip.body[r * count:(r + 1) * count] = xs[r]
                c.call(b.all_gather, ip.at(r * count), ip.at(), count, dt)
                c.expect(f"AllGather in place {tag}", ip.body, want, ip)
                # AlltoAll: block j of rank i goes to rank j, lands as block i
                s, d = Guarded(dt, n * count, big[r]), Guarded(dt, n * count)
                c.call(b.allto_all, s.at(), d.at(), count, dt)
                want = np.concatenate([big[i][r * count:(r + 1) * count] for i in range(n)])
                c.expect(f"AlltoAll {tag}", d.body, want, d)
            ring(c, dt, count, xs)
    return c.result()


def ring(c, dt, count, xs):
    """send to r+1, receive from r-1: grouped, and (n > 1) as a chain without a group."""
    n, r = c.size, c.rank
    nxt, prv = (r + 1) % n, (r - 1) % n
    tag = f"{_name(dt)} count={count}"
    s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
    b.group_start()
    c.call(b.send, s.at(), count, dt, nxt)
    c.call(b.recv, d.at(), count, dt, prv)
    b.group_end()
    c.expect(f"send/recv ring (group) {tag}", d.body, xs[prv], d)
    if n > 1:
        d = Guarded(dt, count)
        if r == 0:
            c.call(b.send, s.at(), count, dt, nxt)
            c.call(b.recv, d.at(), count, dt, prv)
        else:
            c.call(b.recv, d.at(), count, dt, prv)
            c.call(b.send, s.at(), count, dt, nxt)
        c.expect(f"send/recv ring (chain) {tag}", d.body, xs[prv], d)


def large(ctx):
    """Counts beyond one shared-memory chunk (256 KiB) and one p2p ring (64 KiB): AllReduce,
    ReduceScatter, AllGather, Broadcast, AlltoAll and a grouped ring for float32 and bfloat16."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    for dt, count in ((R.DT.Float32, 100_003), (R.DT.Bfloat16, 150_001)):
        tag = f"{_name(dt)} count={count}"
        xs = c.inputs(dt, count, 201)
        s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
        c.call(b.all_reduce, s.at(), d.at(), count, dt, R.b.RedOp.Sum)
        c.expect(f"AllReduce {tag}", d.body, R.reduce_ref(xs, R.b.RedOp.Sum, dt), d)
        c.digest.update(d.body.tobytes())
        ip = Guarded(dt, count, xs[r])
        c.call(b.all_reduce, ip.at(), ip.at(), count, dt, R.b.RedOp.Avg)
        c.expect(f"AllReduce Avg in place {tag}", ip.body, R.reduce_ref(xs, R.b.RedOp.Avg, dt), ip)
        big = c.inputs(dt, n * count, 202)
        s, d = Guarded(dt, n * count, big[r]), Guarded(dt, count)
        c.call(b.reduce_scatter, s.at(), d.at(), count, dt, R.b.RedOp.Max)
        c.expect(f"ReduceScatter Max {tag}", d.body,
                 R.reduce_ref(big, R.b.RedOp.Max, dt)[r * count:(r + 1) * count], d)
        s, d = Guarded(dt, count, xs[r]), Guarded(dt, n * count)
        c.call(b.all_gather, s.at(), d.at(), count, dt)
        c.expect(f"AllGather {tag}", d.body, np.concatenate(xs), d)
        ip = Guarded(dt, count, xs[r])
        c.call(b.broadcast, ip.at(), ip.at(), count, dt, n - 1)
        c.expect(f"Broadcast in place root={n - 1} {tag}", ip.body, xs[n - 1], ip)
        s, d = Guarded(dt, n * count, big[r]), Guarded(dt, n * count)
        c.call(b.allto_all, s.at(), d.at(), count, dt)
        c.expect(f"AlltoAll {tag}", d.body,
                 np.concatenate([big[i][r * count:(r + 1) * count] for i in range(n)]), d)
        ring(c, dt, count, xs)
    return c.result()


def split_allreduce(ctx):
    """AllReduce of 256 KiB and more, which from 4 ranks on runs as a ReduceScatter and an AllGather
    (src/host/api.c): every type x op, in and out of place, bit for bit against the reference
    (the same rank order), at a count n does not divide (the rest is an AllReduce of its own);
    float32 also at one it does."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    for dt in R.ALL_TYPES:
        es = R.NP_TYPES[dt].itemsize
        counts = [(256 << 10) // es + 3] + ([n * ((256 << 10) // es // n + 1)] if dt == R.DT.Float32 else [])
        for count in counts:
            for op in R.OPS:
                xs = c.inputs(dt, count, int(op) * 5 + 3)
                want = R.reduce_ref(xs, op, dt)
                tag = f"{_name(dt)} {R.b.RedOp(op).name} count={count}"
                s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
                c.call(b.all_reduce, s.at(), d.at(), count, dt, op)
                c.expect(f"AllReduce {tag}", d.body, want, d)
                c.expect(f"AllReduce {tag} send buffer", s.body, xs[r], s)
                ip = Guarded(dt, count, xs[r])
                c.call(b.all_reduce, ip.at(), ip.at(), count, dt, op)
                c.expect(f"AllReduce in place {tag}", ip.body, want, ip)
                c.digest.update(ip.body.tobytes())
    return c.result()


def streamed(ctx):
    """Outputs of at least 16 MiB per rank, which the segment path writes with non-temporal
    stores (src/host/coll.c copy_out): AllGather, AlltoAll, Gather, Broadcast (in and out of
    place) and Scatter of uint8 at an odd count, so the receive buffers sit at offsets that are
    not multiples of 16 and the copies have ragged heads and tails (the guards must survive)."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    dt = R.DT.Uint8
    block = (16 << 20) // n + 5  # n * block >= 16 MiB
    whole = (16 << 20) + 7
    xs = c.inputs(dt, block, 301)
    s, d = Guarded(dt, block, xs[r]), Guarded(dt, n * block)
    c.call(b.all_gather, s.at(), d.at(), block, dt)
    c.expect("AllGather streamed", d.body, np.concatenate(xs), d)
    c.digest.update(d.body.tobytes())
    big = c.inputs(dt, n * block, 302)
    s, d = Guarded(dt, n * block, big[r]), Guarded(dt, n * block)
    c.call(b.allto_all, s.at(), d.at(), block, dt)
    c.expect("AlltoAll streamed", d.body, np.concatenate([big[i][r * block:(r + 1) * block] for i in range(n)]), d)
    s, d = Guarded(dt, block, xs[r]), Guarded(dt, n * block)
    c.call(b.gather, s.at(), d.at(), block, dt, 0)
    if r == 0:
        c.expect("Gather root=0 streamed", d.body, np.concatenate(xs), d)
    ws = c.inputs(dt, whole, 303)
    s, d = Guarded(dt, whole, ws[r]), Guarded(dt, whole)
    c.call(b.broadcast, s.at(), d.at(), whole, dt, n - 1)
    c.expect(f"Broadcast root={n - 1} streamed", d.body, ws[n - 1], d)
    c.digest.update(d.body.tobytes())
    ip = Guarded(dt, whole, ws[r])
    c.call(b.broadcast, ip.at(), ip.at(), whole, dt, 0)
    c.expect("Broadcast in place root=0 streamed", ip.body, ws[0], ip)
    root = n - 1
    sc = R.make_input(dt, n * whole, root, 304)
    s, d = Guarded(dt, n * whole, sc if r == root else None), Guarded(dt, whole)
    c.call(b.scatter, s.at(), d.at(), whole, dt, root)
    c.expect(f"Scatter root={root} streamed", d.body, sc[r * whole:(r + 1) * whole], d)
    return c.result()


def staged(ctx):
    """Broadcasts whose steps are streamed into the segment by the root (steps of 16 KiB up to
    512 KiB, src/host/coll.c stage_for_peers), at the edges of that range and across several steps
    with a short last one, in and out of place, from the first and the last rank; uint8 at odd
    counts, so the copies have ragged heads and tails (the guards must survive)."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    dt = R.DT.Uint8
    for i, count in enumerate(((16 << 10) - 1, (16 << 10) + 7, 100003, (512 << 10) - 1, 512 << 10, 300007)):
        xs = c.inputs(dt, count, 400 + i)
        for root in sorted({0, n - 1}):
            s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
            c.call(b.broadcast, s.at(), d.at(), count, dt, root)
            c.expect(f"Broadcast {count} root={root}", d.body, xs[root], d)
            c.digest.update(d.body.tobytes())
            ip = Guarded(dt, count, xs[r])
            c.call(b.broadcast, ip.at(), ip.at(), count, dt, root)
            c.expect(f"Broadcast in place {count} root={root}", ip.body, xs[root], ip)
    return c.result()


def pipelined(ctx):
    """Rooted collectives cut into pipeline steps (src/host/coll.c pipeline_elems: at least
    NCCL_HOST_PIPELINE_STEPS steps of 128 KiB or more, never more than a slot): Broadcast, Reduce,
    Gather and Scatter at sizes below, at and across those bounds, in and out of place, from the
    first and the last rank; float32 sums so that Reduce is checked too, and uint8 at odd counts
    for ragged step ends; AllGather and AlltoAll, whose own block is copied before the wait."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    for dt, count in ((R.DT.Uint8, (256 << 10) + 3), (R.DT.Uint8, (1 << 20) + 4097), (R.DT.Float32, (1 << 20) + 5),
                      (R.DT.Float32, 65536)):
        tag = f"{_name(dt)} count={count}"
        xs = c.inputs(dt, count, 500)
        big = c.inputs(dt, n * count, 501)
        for root in sorted({0, n - 1}):
            s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
            c.call(b.broadcast, s.at(), d.at(), count, dt, root)
            c.expect(f"Broadcast root={root} {tag}", d.body, xs[root], d)
            ip = Guarded(dt, count, xs[r])
            c.call(b.broadcast, ip.at(), ip.at(), count, dt, root)
            c.expect(f"Broadcast in place root={root} {tag}", ip.body, xs[root], ip)
            c.digest.update(ip.body.tobytes())
            if dt == R.DT.Float32:
                s, d = Guarded(dt, count, xs[r]), Guarded(dt, count)
                c.call(b.reduce, s.at(), d.at(), count, dt, R.b.RedOp.Sum, root)
                if r == root:
                    c.expect(f"Reduce root={root} {tag}", d.body, R.reduce_ref(xs, R.b.RedOp.Sum, dt), d)
                elif not d.untouched():
                    c.fail(f"Reduce root={root} {tag}: wrote recv off root")
            s, d = Guarded(dt, count, xs[r]), Guarded(dt, n * count)
            c.call(b.gather, s.at(), d.at(), count, dt, root)
            if r == root:
                c.expect(f"Gather root={root} {tag}", d.body, np.concatenate(xs), d)
            elif not d.untouched():
                c.fail(f"Gather root={root} {tag}: wrote recv off root")
            s, d = Guarded(dt, n * count, big[r]), Guarded(dt, count)
            c.call(b.scatter, s.at(), d.at(), count, dt, root)
            c.expect(f"Scatter root={root} {tag}", d.body, big[root][r * count:(r + 1) * count], d)
        s, d = Guarded(dt, count, xs[r]), Guarded(dt, n * count)
        c.call(b.all_gather, s.at(), d.at(), count, dt)
        c.expect(f"AllGather {tag}", d.body, np.concatenate(xs), d)
        ip = Guarded(dt, n * count)
        ip.body[r * count:(r + 1) * count] = xs[r]
        c.call(b.all_gather, ip.at(r * count), ip.at(), count, dt)
        c.expect(f"AllGather in place {tag}", ip.body, np.concatenate(xs), ip)
        s, d = Guarded(dt, n * count, big[r]), Guarded(dt, n * count)
        c.call(b.allto_all, s.at(), d.at(), count, dt)
        c.expect(f"AlltoAll {tag}", d.body, np.concatenate([big[i][r * count:(r + 1) * count] for i in range(n)]), d)
    return c.result()


def pipeline_of_rank0(ctx):
    """Ranks that disagree on NCCL_HOST_PIPELINE_STEPS (rank 0: 1, the others: 7) still cut every
    rooted collective alike, since rank 0's value, kept in the segment header, applies to all:
    each rank sets its own value before its first library call, then runs pipelined()."""
    import os

    from rank_main import init_comm

    os.environ["NCCL_HOST_PIPELINE_STEPS"] = "1" if ctx.rank == 0 else "7"
    ctx.comm = init_comm(ctx.size, ctx.uid, ctx.rank)
    return pipelined(ctx)


def spec_examples(ctx):
    """The worked cases of docs/host-backend.md#reductions-and-numerics, computed from the rank count: fp8 Avg
    (three 7.0s in e4m3 average to 7.5), fp8 saturation, fp16 overflow to Inf, NaN-suppressing
    Max/Min, -0 < +0 for fp16/bf16, signed integer Avg truncating toward zero."""
    c = Checker(ctx)
    n, r = c.size, c.rank
    T = R.NP_TYPES

    def allreduce(dt, vals, op):
        x = np.array(vals, dtype=np.float64 if not R.is_int(dt) else np.int64)
        s = R.to_type(x.astype(np.float32), dt) if not R.is_int(dt) else x.astype(T[dt])
        d = Guarded(dt, len(vals))
        c.call(b.all_reduce, s.ctypes.data, d.at(), len(vals), dt, op)
        if not d.guards_ok():
            c.fail(f"{R.DT(dt).name}: wrote outside the buffer")
        return d.body.astype(np.float64) if not R.is_int(dt) else d.body.astype(np.int64)

    got = allreduce(DT.Float8e4m3, [7.0], OP.Avg)[0]
    want = float(R.reduce_ref([R.to_type(np.float32([7.0]), DT.Float8e4m3)] * n, OP.Avg, DT.Float8e4m3)[0])
    if got != want or (n == 3 and got != 7.5):
        c.fail(f"e4m3 Avg of {n} x 7.0: {got}, want {want}")
    got = allreduce(DT.Float8e4m3, [448.0, -448.0], OP.Sum)
    if list(got) != [448.0, -448.0]:
        c.fail(f"e4m3 Sum of {n} x +-448 does not saturate: {got}")
    got = allreduce(DT.Float8e5m2, [57344.0], OP.Prod)[0]
    if got != 57344.0:
        c.fail(f"e5m2 Prod of {n} x 57344 does not saturate: {got}")
    got = allreduce(DT.Float16, [60000.0], OP.Sum)[0]
    if (n == 1 and got != 60000.0) or (n > 1 and got != np.inf):
        c.fail(f"fp16 Sum of {n} x 60000: {got}")
    for dt in (DT.Float16, DT.Bfloat16, DT.Float32, DT.Float64):
        name = R.DT(dt).name
        nan_here = r == 0
        got = allreduce(dt, [np.nan if nan_here else float(r), np.nan], OP.Max)
        want0 = float(n - 1) if n > 1 else np.nan
        if not (np.isnan(got[0]) if np.isnan(want0) else got[0] == want0) or not np.isnan(got[1]):
            c.fail(f"{name} Max with NaN on rank 0: {got}, want [{want0}, nan]")
        got = allreduce(dt, [np.nan if nan_here else -float(r)], OP.Min)[0]
        want0 = -float(n - 1) if n > 1 else np.nan
        if not (np.isnan(got) if np.isnan(want0) else got == want0):
            c.fail(f"{name} Min with NaN on rank 0: {got}, want {want0}")
    if n > 1:
        for dt in (DT.Float16, DT.Bfloat16):
            v = [-0.0 if r % 2 == 0 else 0.0]
            mx, mn = allreduce(dt, v, OP.Max)[0], allreduce(dt, v, OP.Min)[0]
            if np.signbit(mx) or not np.signbit(mn):
                c.fail(f"{R.DT(dt).name} Max/Min of -0 and +0: {mx!r}/{mn!r}, want +0/-0")
    got = allreduce(DT.Int32, [-(r + 1) * 5 - 1, (r + 1) * 5 + 1], OP.Avg)
    s = sum(-(i + 1) * 5 - 1 for i in range(n))
    want = [-(abs(s) // n), abs(s) // n]
    if list(got) != want:
        c.fail(f"int32 Avg toward zero: {list(got)}, want {want}")
    return c.result()
