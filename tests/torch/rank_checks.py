"""One rank of tests/torch/test_backend.py: every c10d operation of the "nccl4py" backend,
each result checked against a numpy reference computed from the inputs every rank can rebuild
(they are functions of the rank). Each check reports "ok" or its failure; one failing check does
not stop the others, so the test names each one.

    python -m nccl.run -n N tests/torch/rank_checks.py [core|ctypes]

core: the CPU tensors go through nccl.core's Communicator (the normal path on a machine without
a GPU). ctypes: the group's CPU communicator is replaced by a second handle on the host backend
(nccl.torch._hostlib), the path CPU tensors take on a GPU machine, exercised here on the CPU.
"""

import sys
import traceback
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

import nccl.torch  # noqa: F401 - registers the backend
from launch import init_method, report

CHECKS = {}


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


def inp(r, n=6, dtype=torch.float32):
    """Rank r's input: small values that every dtype holds, different on every rank."""
    return torch.tensor([(r + 1) * (i % 3 + 1) for i in range(n)], dtype=torch.float64).to(dtype)


def np_of(t):
    return t.double().numpy() if t.dtype in (torch.bfloat16, torch.float16) else t.numpy()


def expect(got, want, what):
    got = np_of(got) if isinstance(got, torch.Tensor) else np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want.astype(got.dtype)):
        raise AssertionError(f"{what}: got {got.tolist()}, expected {want.tolist()}")


# ---- reductions ----

NUMPY_OPS = {"SUM": lambda a: a.sum(0), "PRODUCT": lambda a: a.prod(0), "MIN": lambda a: a.min(0),
             "MAX": lambda a: a.max(0), "AVG": lambda a: a.sum(0) / a.shape[0]}


@check
def all_reduce_ops_and_dtypes(r, n):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
                  torch.int32, torch.int64):
        for name, ref in NUMPY_OPS.items():
            if name == "AVG" and not dtype.is_floating_point:
                continue
            t = inp(r, dtype=dtype)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, name))
            want = ref(np.stack([np_of(inp(j, dtype=dtype)) for j in range(n)]).astype(np.float64))
            expect(t, want, f"all_reduce {name} {dtype}")


@check
def all_reduce_staged_dtypes(r, n):
    b = torch.tensor([r == 0, False, True, r == n - 1])
    for name, want in (("SUM", [True, False, True, True]), ("MAX", [True, False, True, True]),
                       ("MIN", [False, False, True, False]), ("PRODUCT", [False, False, True, False])):
        t = b.clone()
        dist.all_reduce(t, op=getattr(dist.ReduceOp, name))
        expect(t, want, f"all_reduce {name} bool")
    t = torch.tensor([30000, -30000, r], dtype=torch.int16)
    dist.all_reduce(t)
    expect(t, np.array([30000 * n, -30000 * n, sum(range(n))]).astype(np.int16), "all_reduce SUM int16 (wraps)")
    c = torch.complex(inp(r), -inp(r))
    dist.all_reduce(c)
    s = sum(np_of(inp(j)) for j in range(n))
    expect(torch.view_as_real(c), np.stack([s, -s], 1), "all_reduce SUM complex64")


@check
def all_reduce_bitwise(r, n):
    vals = [torch.tensor([6 + j, 3 * j, 255 - j], dtype=torch.int32) for j in range(n)]
    for name, fn in (("BAND", np.bitwise_and), ("BOR", np.bitwise_or), ("BXOR", np.bitwise_xor)):
        t = vals[r].clone()
        dist.all_reduce(t, op=getattr(dist.ReduceOp, name))
        expect(t, fn.reduce(np.stack([v.numpy() for v in vals])), f"all_reduce {name}")
    try:
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND)
    except TypeError as exc:
        if "does not support BAND on torch.float32" not in str(exc):
            raise
    else:
        raise AssertionError("BAND of floats was accepted")


@check
def all_reduce_premul_sum(r, n):
    t = inp(r)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    expect(t, 0.5 * sum(np_of(inp(j)) for j in range(n)), "all_reduce PREMUL_SUM")


@check
def all_reduce_non_contiguous(r, n):
    base = torch.stack([inp(r), inp(r) * 10], 1)  # column 0 is not contiguous
    col = base[:, 0]
    dist.all_reduce(col)
    expect(base[:, 0], sum(np_of(inp(j)) for j in range(n)), "all_reduce of a column")
    expect(base[:, 1], np_of(inp(r)) * 10, "the other column untouched")


@check
def all_reduce_async_work(r, n):
    t = inp(r)
    work = dist.all_reduce(t, async_op=True)
    if not work.is_completed() or not work.wait() or work.exception() is not None or not work.is_success():
        raise AssertionError("async all_reduce: the Work does not report a completed, successful operation")
    fut = work.get_future()
    value = fut.wait()
    if len(value) != 1 or value[0] is not t:
        raise AssertionError(f"get_future() holds {value}, not the output tensor")
    expect(t, sum(np_of(inp(j)) for j in range(n)), "async all_reduce")
    done = fut.then(lambda f: f.value()[0] * 2).wait()
    expect(done, 2 * sum(np_of(inp(j)) for j in range(n)), "a future's then()")


@check
def reduce_to_each_root(r, n):
    for root in range(n):
        t = inp(r)
        dist.reduce(t, root, op=dist.ReduceOp.MAX)
        expect(t, inp(n - 1) if r == root else inp(r), f"reduce MAX to {root}")


@check
def all_reduce_coalesced(r, n):
    ts = [inp(r), inp(r, 3, torch.int64)]
    with dist._coalescing_manager(async_ops=False):
        for t in ts:
            dist.all_reduce(t)
    expect(ts[0], sum(np_of(inp(j)) for j in range(n)), "coalesced all_reduce 0")
    expect(ts[1], sum(np_of(inp(j, 3, torch.int64)) for j in range(n)), "coalesced all_reduce 1")


# ---- data movement ----

@check
def broadcast_from_each_root(r, n):
    for root in range(n):
        for dtype in (torch.float32, torch.int16, torch.complex64, torch.bool):
            t = inp(r, dtype=dtype) if dtype is not torch.bool else torch.tensor([r == root, r != root])
            dist.broadcast(t, root)
            want = inp(root, dtype=dtype) if dtype is not torch.bool else torch.tensor([True, False])
            if not torch.equal(t, want):
                raise AssertionError(f"broadcast {dtype} from {root}: got {t.tolist()}, expected {want.tolist()}")


@check
def all_gather_forms(r, n):
    outs = [torch.empty(6) for _ in range(n)]
    dist.all_gather(outs, inp(r))
    for j, o in enumerate(outs):
        expect(o, np_of(inp(j)), f"all_gather part {j}")
    uneven = [torch.empty(j + 1, dtype=torch.int64) for j in range(n)]
    dist.all_gather(uneven, torch.arange(r + 1) + 100 * r)
    for j, o in enumerate(uneven):
        expect(o, np.arange(j + 1) + 100 * j, f"all_gather of uneven sizes, part {j}")
    flat = torch.empty(6 * n)
    dist.all_gather_into_tensor(flat, inp(r))
    expect(flat, np.concatenate([np_of(inp(j)) for j in range(n)]), "all_gather_into_tensor")
    stacked = torch.empty(n, 6, dtype=torch.int16)
    dist.all_gather_into_tensor(stacked, inp(r, dtype=torch.int16))
    expect(stacked, np.stack([np_of(inp(j, dtype=torch.int16)) for j in range(n)]), "all_gather_into_tensor int16")


@check
def all_gather_coalesced_forms(r, n):
    outs = [[torch.empty(2, 2), torch.empty(3, dtype=torch.float32)] for _ in range(n)]
    dist.all_gather_coalesced(outs, [torch.full((2, 2), float(r)), torch.arange(3.0) + r])
    for j in range(n):
        expect(outs[j][0], np.full((2, 2), j), f"all_gather_coalesced[{j}][0]")
        expect(outs[j][1], np.arange(3.0) + j, f"all_gather_coalesced[{j}][1]")
    flats = [torch.empty(6 * n), torch.empty(2 * n)]
    with dist._coalescing_manager(async_ops=False):
        dist.all_gather_into_tensor(flats[0], inp(r))
        dist.all_gather_into_tensor(flats[1], torch.full((2,), float(r)))
    expect(flats[0], np.concatenate([np_of(inp(j)) for j in range(n)]), "coalesced all_gather_into_tensor 0")
    expect(flats[1], np.repeat(np.arange(n, dtype=np.float32), 2), "coalesced all_gather_into_tensor 1")


@check
def reduce_scatter_forms(r, n):
    parts = [inp(r) + j for j in range(n)]
    out = torch.empty(6)
    dist.reduce_scatter(out, parts)
    expect(out, sum(np_of(inp(k)) + r for k in range(n)), "reduce_scatter")
    big = torch.cat(parts)
    out = torch.empty(6)
    dist.reduce_scatter_tensor(out, big, op=dist.ReduceOp.MAX)
    expect(out, np_of(inp(n - 1)) + r, "reduce_scatter_tensor MAX")
    uneven = [torch.full((j + 1,), float(r + j)) for j in range(n)]
    out = torch.empty(r + 1)
    dist.reduce_scatter(out, uneven)
    expect(out, np.full(r + 1, sum(k + r for k in range(n))), "reduce_scatter of uneven sizes")
    outs = [torch.empty(6), torch.empty(1)]
    with dist._coalescing_manager(async_ops=False):
        dist.reduce_scatter_tensor(outs[0], big)
        dist.reduce_scatter_tensor(outs[1], torch.arange(float(n)))
    expect(outs[0], sum(np_of(inp(k)) + r for k in range(n)), "coalesced reduce_scatter_tensor 0")
    expect(outs[1], [n * r], "coalesced reduce_scatter_tensor 1")


@check
def all_to_all_forms(r, n):
    out = torch.empty(2 * n)
    dist.all_to_all_single(out, torch.arange(2.0 * n) + 100 * r)
    expect(out, np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * j for j in range(n)]), "all_to_all_single")
    # rank j sends j + k + 1 rows to rank k; each row is [j, k]
    in_splits = [r + k + 1 for k in range(n)]
    out_splits = [j + r + 1 for j in range(n)]
    rows = torch.cat([torch.tensor([[r, k]] * (r + k + 1)) for k in range(n)])
    out = torch.empty(sum(out_splits), 2, dtype=torch.int64)
    dist.all_to_all_single(out, rows, out_splits, in_splits)
    expect(out, np.concatenate([np.array([[j, r]] * (j + r + 1)) for j in range(n)]), "all_to_all_single with splits")
    outs = [torch.empty(j + 1, dtype=torch.int32) for j in range(n)]
    dist.all_to_all(outs, [torch.full((r + 1,), r * 10 + k, dtype=torch.int32) for k in range(n)])
    for j, o in enumerate(outs):
        expect(o, np.full(j + 1, j * 10 + r), f"all_to_all part {j}")


@check
def gather_and_scatter(r, n):
    for root in (0, n - 1):
        outs = [torch.empty(6) for _ in range(n)] if r == root else None
        dist.gather(inp(r), outs, dst=root)
        if r == root:
            for j, o in enumerate(outs):
                expect(o, np_of(inp(j)), f"gather to {root}, part {j}")
        out = torch.empty(6)
        dist.scatter(out, [inp(j) * 2 for j in range(n)] if r == root else None, src=root)
        expect(out, np_of(inp(r)) * 2, f"scatter from {root}")


@check
def send_recv(r, n):
    nxt, prv = (r + 1) % n, (r - 1) % n
    y = torch.empty(6)
    if r % 2 == 0:
        dist.send(inp(r), nxt)
        dist.recv(y, prv)
    else:
        dist.recv(y, prv)
        dist.send(inp(r), nxt)
    expect(y, np_of(inp(prv)), "send/recv ring")
    # every rank sends before it receives: the queue runs both as one group
    z = torch.empty(3, dtype=torch.int16)
    reqs = [dist.isend(torch.full((3,), r, dtype=torch.int16), nxt, tag=7), dist.irecv(z, prv, tag=7)]
    for req in reqs:
        req.wait()
    expect(z, np.full(3, prv), "isend/irecv ring (int16, tag 7)")
    ops = [dist.P2POp(dist.isend, inp(r), nxt), dist.P2POp(dist.irecv, torch.empty(6), prv),
           dist.P2POp(dist.isend, inp(r) * 3, r), dist.P2POp(dist.irecv, torch.empty(6), r)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    expect(ops[1].tensor, np_of(inp(prv)), "batch_isend_irecv from the previous rank")
    expect(ops[3].tensor, np_of(inp(r)) * 3, "batch_isend_irecv to itself")
    try:
        dist.recv(torch.empty(1))
    except RuntimeError as exc:
        if "receiving from any source" not in str(exc):
            raise
    else:
        raise AssertionError("recv without src was accepted")


@check
def barrier_and_objects(r, n):
    dist.barrier()
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "text": "x" * r})
    if objs != [{"rank": j, "text": "x" * j} for j in range(n)]:
        raise AssertionError(f"all_gather_object: {objs}")
    box = [("from", 0)] if r == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    if box != [("from", 0)]:
        raise AssertionError(f"broadcast_object_list: {box}")
    got = [None] * n if r == 0 else None
    dist.gather_object(r * r, got, dst=0)
    if r == 0 and got != [j * j for j in range(n)]:
        raise AssertionError(f"gather_object: {got}")
    mine = [None]
    dist.scatter_object_list(mine, [f"to {j}" for j in range(n)] if r == 0 else None, src=0)
    if mine != [f"to {r}"]:
        raise AssertionError(f"scatter_object_list: {mine}")


@check
def subgroups(r, n):
    ends = [0, n - 1]
    g = dist.new_group(ends)
    if r in ends:
        t = torch.tensor([float(r)])
        dist.all_reduce(t, group=g)
        expect(t, [n - 1], "all_reduce in new_group([0, n-1])")
        if dist.get_backend(g) != "nccl4py":
            raise AssertionError(f"the subgroup's backend is {dist.get_backend(g)}")
    mine, _ = dist.new_subgroups(group_size=1)
    t = torch.tensor([float(r)])
    dist.all_reduce(t, group=mine)
    expect(t, [r], "all_reduce in a subgroup of one rank")
    if n >= 2:
        pairs = [[j, j + 1] for j in range(0, n - 1, 2)]
        pair, _ = dist.new_subgroups_by_enumeration(pairs)
        if pair is not None:
            t = torch.tensor([1.0])
            dist.all_reduce(t, group=pair)
            expect(t, [2], "all_reduce in new_subgroups_by_enumeration")


@check
def timeout_and_identity(r, n):
    pg = dist.group.WORLD
    if pg.name() != "nccl4py" or dist.get_backend() != "nccl4py" or pg.size() != n or pg.rank() != r:
        raise AssertionError(f"identity: {pg.name()} {dist.get_backend()} {pg.size()} {pg.rank()}")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "core"
    dist.init_process_group("nccl4py", timeout=timedelta(seconds=60), **init_method())
    r, n = dist.get_rank(), dist.get_world_size()
    if mode == "ctypes":
        from nccl.torch._channels import exchange_id
        from nccl.torch._hostlib import HostLibraryChannel

        pg = dist.group.WORLD
        store = dist.distributed_c10d._get_default_store()
        uid = exchange_id(store, "test/ctypes", r, HostLibraryChannel.unique_id, timedelta(seconds=60))
        pg._cpu = HostLibraryChannel(n, r, uid)
    results = {}
    for name, fn in CHECKS.items():
        try:
            fn(r, n)
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - every check reports
            results[name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
        dist.barrier()
    report(results)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
