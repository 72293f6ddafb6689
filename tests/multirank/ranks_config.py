"""Rank-side checks of the eight *_config collectives (ncclXxxConfig) on the host backend: each
runs with a default CollConfig, with a tuned one, and with 0 (no config), and its outputs are
compared with reference.py; an out-of-range config is refused on every rank before the collective
(so no rank waits for the others)."""

import numpy as np

import nccl.bindings.nccl as b
import reference as R
from ranks_collectives import Checker, Guarded

TYPES = (R.DT.Float32, R.DT.Int32, R.DT.Bfloat16)
OPS = (b.RedOp.Sum, b.RedOp.Max)
COUNT = 37


def _configs():
    default = b.CollConfig()
    tuned = b.CollConfig()
    tuned.min_ctas, tuned.max_ctas, tuned.cta_policy = 1, 4, b.NCCL_CTA_POLICY_EFFICIENCY
    tuned.force_alg_selection = 0
    return {"default": default, "tuned": tuned, "none": 0}


class ConfigChecker(Checker):
    def call_config(self, fn, *args):
        """fn(*args[:-1], comm, stream, config): the config comes after the stream."""
        self.ncalls += 1
        fn(*args[:-1], self.comm, 0, args[-1])


def config_collectives(ctx):
    c = ConfigChecker(ctx)
    n, r, k = c.size, c.rank, COUNT
    root = n - 1
    for label, cfg in _configs().items():
        for dt in TYPES:
            xs = c.inputs(dt, k, 3)
            big = c.inputs(dt, n * k, 5)
            for op in OPS:
                tag = f"{label} {R.DT(dt).name} {op.name}"
                want = R.reduce_ref(xs, op, dt)
                s, d = Guarded(dt, k, xs[r]), Guarded(dt, k)
                c.call_config(b.all_reduce_config, s.at(), d.at(), k, dt, op, cfg)
                c.expect(f"all_reduce_config {tag}", d.body, want, d)
                d = Guarded(dt, k)
                c.call_config(b.reduce_config, s.at(), d.at(), k, dt, op, root, cfg)
                if r == root:
                    c.expect(f"reduce_config {tag}", d.body, want, d)
                s, d = Guarded(dt, n * k, big[r]), Guarded(dt, k)
                c.call_config(b.reduce_scatter_config, s.at(), d.at(), k, dt, op, cfg)
                c.expect(f"reduce_scatter_config {tag}", d.body, R.reduce_ref(big, op, dt)[r * k:(r + 1) * k], d)
            tag = f"{label} {R.DT(dt).name}"
            s, d = Guarded(dt, k, xs[r]), Guarded(dt, n * k)
            c.call_config(b.all_gather_config, s.at(), d.at(), k, dt, cfg)
            c.expect(f"all_gather_config {tag}", d.body, np.concatenate(xs), d)
            s, d = Guarded(dt, n * k, big[r]), Guarded(dt, n * k)
            c.call_config(b.allto_all_config, s.at(), d.at(), k, dt, cfg)
            c.expect(f"allto_all_config {tag}", d.body, np.concatenate([x[r * k:(r + 1) * k] for x in big]), d)
            s, d = Guarded(dt, k, xs[r]), Guarded(dt, k)
            c.call_config(b.broadcast_config, s.at(), d.at(), k, dt, root, cfg)
            c.expect(f"broadcast_config {tag}", d.body, xs[root], d)
            d = Guarded(dt, n * k)
            c.call_config(b.gather_config, s.at(), d.at(), k, dt, 0, cfg)
            if r == 0:
                c.expect(f"gather_config {tag}", d.body, np.concatenate(xs), d)
            s, d = Guarded(dt, n * k, big[r]), Guarded(dt, k)
            c.call_config(b.scatter_config, s.at(), d.at(), k, dt, root, cfg)
            c.expect(f"scatter_config {tag}", d.body, big[root][r * k:(r + 1) * k], d)
    out = c.result()
    bad = b.CollConfig()
    bad.min_ctas, bad.max_ctas = 8, 2
    f32 = c.inputs(R.DT.Float32, k, 3)
    s, d = Guarded(R.DT.Float32, k, f32[r]), Guarded(R.DT.Float32, k)
    try:
        b.all_reduce_config(s.at(), d.at(), k, R.DT.Float32, b.RedOp.Sum, ctx.comm, 0, bad)
        out["refused"] = None
    except b.NCCLError as exc:
        out["refused"] = (type(exc).__name__, str(exc), d.untouched())
    # the communicator still works after the refusal
    d = Guarded(R.DT.Float32, k)
    b.all_reduce(s.at(), d.at(), k, R.DT.Float32, b.RedOp.Sum, ctx.comm, 0)
    out["after"] = R.same_bits(d.body, R.reduce_ref(f32, b.RedOp.Sum, R.DT.Float32))
    return out
