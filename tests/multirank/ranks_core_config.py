"""Rank side of test_core_config.py: nccl4py 0.6.0 call patterns on the host backend. Every
collective with config=None, a default NCCLCollConfig and a filled one, against numpy; properties
and teams against the library's own answers; 0.3.1-style Communicator.init beside 0.6.0-style use
in one program; torch tensors where torch is installed."""

import numpy as np

import nccl.bindings.nccl as b
import nccl.core as nc
from ranks_core import Checker, data, reference

CONFIGS = {
    "none": None,
    "default": nc.NCCLCollConfig(),
    "filled": nc.NCCLCollConfig(min_ctas=1, max_ctas=4, cta_policy=nc.CTAPolicy.EFFICIENCY, user_profiler_tag=9,
                                vendor_options=(nc.VendorOption(0x10, 1, int_value=3),)),
}
DTYPES = [np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.float64)]


def _collectives(k, c, to_array=np.asarray, make=None):
    """The eight collectives under every config; make(dt, values) builds a buffer (numpy default)."""
    make = make or (lambda values: values.copy())
    rank, size = k.rank, k.size
    root = size - 1
    for label, cfg in CONFIGS.items():
        for dt in DTYPES:
            n, blk = 5, 3
            x = make(data(dt, n, rank))
            y = make(np.full(n, 99, dtype=dt))
            c.allreduce(x, y, nc.SUM, config=cfg)
            k.same(f"allreduce [{label}] {dt}", to_array(y), reference(dt, n, size, nc.SUM))
            y = make(np.full(n, 99, dtype=dt))
            c.reduce(x, y, nc.MAX, root, config=cfg)
            if rank == root:
                k.same(f"reduce [{label}] {dt}", to_array(y), reference(dt, n, size, nc.MAX))
            y = make(np.full(n, 99, dtype=dt))
            c.broadcast(make(data(dt, n, 0)), y, 0, config=cfg)
            k.same(f"broadcast [{label}] {dt}", to_array(y), data(dt, n, 0))
            every = np.concatenate([data(dt, n, r) for r in range(size)])
            y = make(np.full(n * size, 99, dtype=dt))
            c.allgather(x, y, config=cfg)
            k.same(f"allgather [{label}] {dt}", to_array(y), every)
            y = make(np.full(n * size, 99, dtype=dt))
            c.gather(x, y, root, config=cfg)
            if rank == root:
                k.same(f"gather [{label}] {dt}", to_array(y), every)
            src = make(data(dt, blk * size, rank))
            y = make(np.full(blk, 99, dtype=dt))
            c.reduce_scatter(src, y, nc.SUM, config=cfg)
            want = reference(dt, blk * size, size, nc.SUM)[rank * blk:(rank + 1) * blk]
            k.same(f"reduce_scatter [{label}] {dt}", to_array(y), want)
            y = make(np.full(blk * size, 99, dtype=dt))
            c.alltoall(src, y, config=cfg)
            want = np.concatenate([data(dt, blk * size, r)[rank * blk:(rank + 1) * blk] for r in range(size)])
            k.same(f"alltoall [{label}] {dt}", to_array(y), want)
            y = make(np.full(blk, 99, dtype=dt))
            c.scatter(make(data(dt, blk * size, root)), y, root, config=cfg)
            k.same(f"scatter [{label}] {dt}", to_array(y), data(dt, blk * size, root)[rank * blk:(rank + 1) * blk])
            k.ncalls += 8


def config_collectives(ctx):
    k = Checker(ctx)
    _collectives(k, k.comm)
    # a config the library refuses (minCTAs must be positive) is its NCCLInvalidArgument, not ignored
    k.raises("bad config value", b.NCCLInvalidArgument, "*", k.comm.allreduce, np.zeros(2, np.float32),
             np.zeros(2, np.float32), nc.SUM, config=nc.NCCLCollConfig(min_ctas=-1))
    try:
        import torch
    except ImportError:
        return k.result()
    _collectives(k, k.comm, to_array=lambda t: t.numpy(), make=lambda values: torch.from_numpy(values.copy()))
    return k.result()


def both_conventions(ctx):
    """0.3.1's Communicator.init(nranks, rank, unique_id) beside 0.6.0's properties, teams, config=
    and versions in one program."""
    k = Checker(ctx)
    uid = nc.UniqueId.from_bytes(ctx.uid)
    with nc.Communicator.init(ctx.size, ctx.rank, uid) as c:
        x = np.full(4, ctx.rank + 1, np.float64)
        c.allreduce(x, x, nc.SUM)  # 0.3.1 form
        c.allreduce(x, x, nc.SUM, stream=None, config=nc.NCCLCollConfig(min_ctas=1))  # 0.6.0 form
        total = ctx.size * (ctx.size + 1) / 2
        k.same("allreduce twice", x, np.full(4, total * ctx.size))
        p = c.properties
        if (p.rank, p.n_ranks) != (ctx.rank, ctx.size) or p.cuda_dev != c.cuda_dev or p.gin_type != c.gin_type:
            k.fail(f"properties {p}")
        world = c.team_world
        if (world.n_ranks, world.rank) != (ctx.size, ctx.rank):
            k.fail(f"team_world {world}")
        if [c.team_rank_to_world(world, r) for r in range(ctx.size)] != list(range(ctx.size)):
            k.fail("team_rank_to_world over team_world")
        lsa = c.team_lsa
        if not isinstance(lsa, nc.NCCLTeam) or not isinstance(c.team_rail, nc.NCCLTeam):
            k.fail(f"team_lsa/team_rail {lsa} {c.team_rail}")
        v = nc.get_version()
        if v.libnccl is None or str(v.nccl4py) != nc.__version__:
            k.fail(f"get_version {v}")
        with c.split(0, ctx.rank) as other:
            k.raises("team of another communicator", nc.NcclInvalid,
                     "team_rank_to_world: team belongs to another communicator",
                     c.team_rank_to_world, other.team_world, 0)
        k.ncalls += 1
    return k.result()
