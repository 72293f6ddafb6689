"""Independent numpy references for the host backend's reductions (docs/host-backend.md#reductions-and-numerics).

Every reduction combines two values at a time in rank order 0..n-1 and rounds to the element type
after each step.  fp16/bf16 operate in float32 and round; fp8 operates in half (float32, rounded to
half) and goes back to fp8 with saturation to the largest finite value; integers wrap.
"""

from collections.abc import Mapping

import numpy as np

import nccl.bindings.nccl as b

DT = b.DataType
OPS = [b.RedOp.Sum, b.RedOp.Prod, b.RedOp.Max, b.RedOp.Min, b.RedOp.Avg]


class _NpTypes(Mapping):
    """{DataType: numpy dtype}. bfloat16 and fp8 are ml_dtypes' types; ml_dtypes is imported when
    one of them is first looked up: the import costs a rank about 0.6 s of CPU, and most checks
    use no such type."""

    NAMES = {
        DT.Int8: "int8", DT.Uint8: "uint8", DT.Int32: "int32", DT.Uint32: "uint32", DT.Int64: "int64",
        DT.Uint64: "uint64", DT.Float16: "float16", DT.Float32: "float32", DT.Float64: "float64",
        DT.Bfloat16: "ml_dtypes.bfloat16", DT.Float8e4m3: "ml_dtypes.float8_e4m3fn",
        DT.Float8e5m2: "ml_dtypes.float8_e5m2",
    }

    def __init__(self):
        self._types = {}

    def __getitem__(self, dt):
        if dt not in self._types:
            module, _, name = self.NAMES[dt].rpartition(".")
            if module:
                import ml_dtypes

                self._types[dt] = np.dtype(getattr(ml_dtypes, name))
            else:
                self._types[dt] = np.dtype(getattr(np, name))
        return self._types[dt]

    def __iter__(self):
        return iter(self.NAMES)

    def __len__(self):
        return len(self.NAMES)


NP_TYPES = _NpTypes()
ALL_TYPES = list(NP_TYPES)
FP8 = {DT.Float8e4m3: 448.0, DT.Float8e5m2: 57344.0}
HALFISH = {DT.Float16, DT.Bfloat16}


def is_int(dt):
    return NP_TYPES[dt].kind in "iu"


def to_type(x32, dt):
    """float32 (or wider) values rounded to dt, fp8 saturating to the largest finite value."""
    t = NP_TYPES[dt]
    if dt in FP8:
        m = FP8[dt]
        x = np.asarray(x32, dtype=np.float32)
        x = np.where(np.isnan(x), x, np.clip(x, -m, m))
        return x.astype(t)
    return np.asarray(x32).astype(t)


def _work(x, dt):
    """The working representation of one step: float32 for fp16/bf16, half (in float32) for fp8."""
    return np.asarray(x).astype(np.float32)


def _finish(w, dt):
    if dt in FP8:  # half overflow gives +-Inf, which saturates to the largest finite fp8
        with np.errstate(over="ignore"):
            return to_type(w.astype(np.float16).astype(np.float32), dt)
    with np.errstate(over="ignore"):
        return to_type(w, dt)


def step(a, c, op, dt):
    """One combination a (op) c, rounded to dt."""
    t = NP_TYPES[dt]
    a = np.asarray(a, dtype=t)
    c = np.asarray(c, dtype=t)
    if op in (b.RedOp.Max, b.RedOp.Min):
        f = np.fmax if op == b.RedOp.Max else np.fmin
        if is_int(dt) or dt in (DT.Float32, DT.Float64):
            return f(a, c).astype(t)
        return f(a.astype(np.float32), c.astype(np.float32)).astype(t)  # exact back-conversion
    if is_int(dt) or dt in (DT.Float32, DT.Float64):
        with np.errstate(over="ignore"):
            return (a + c if op == b.RedOp.Sum else a * c).astype(t)
    wa, wc = _work(a, dt), _work(c, dt)
    if dt in FP8:  # operands to half (exact), operate, round to half
        w = wa + wc if op == b.RedOp.Sum else wa * wc
        return _finish(w, dt)
    return _finish(wa + wc if op == b.RedOp.Sum else wa * wc, dt)


def scale_by(x, scalar, dt):
    """scalar * x rounded to dt, the PreMulSum / float Avg pre-multiplication (integers wrap)."""
    t = NP_TYPES[dt]
    x = np.asarray(x, dtype=t)
    if is_int(dt):
        with np.errstate(over="ignore"):
            return (x * np.asarray(scalar, dtype=t)).astype(t)
    if dt in (DT.Float32, DT.Float64):
        return (x * np.asarray(scalar, dtype=t)).astype(t)
    s = np.asarray(scalar, dtype=t).astype(np.float32)
    return _finish(x.astype(np.float32) * s, dt)


def avg_scale(n, dt):
    """(float)(1.0/n) in the element type (1.0/n for float64)."""
    if dt == DT.Float64:
        return np.float64(1.0 / n)
    return to_type(np.float32(1.0 / n), dt)


def reduce_ref(inputs, op, dt):
    """Reference reduction of the per-rank arrays ``inputs`` (rank order)."""
    t = NP_TYPES[dt]
    n = len(inputs)
    xs = [np.asarray(x, dtype=t) for x in inputs]
    if op == b.RedOp.Avg and is_int(dt):
        acc = xs[0]
        for x in xs[1:]:
            acc = step(acc, x, b.RedOp.Sum, dt)
        s = acc.astype(np.int64) if t.kind == "i" else acc.astype(np.uint64)
        if t.kind == "i":
            q = np.abs(s.astype(object)) // n  # magnitude divided, sign of the wrapped sum restored
            q = np.where(s < 0, -q, q)
            return np.array([int(v) for v in q], dtype=np.int64).astype(t) if len(q) else acc
        return (s // np.uint64(n)).astype(t)
    if op == b.RedOp.Avg:
        sc = avg_scale(n, dt)
        xs = [scale_by(x, sc, dt) for x in xs]
        op = b.RedOp.Sum
    acc = xs[0]
    for x in xs[1:]:
        acc = step(acc, x, op, dt)
    return acc.astype(t)


def premulsum_ref(inputs, scalars, dt):
    t = NP_TYPES[dt]
    xs = [scale_by(x, s, dt) for x, s in zip(inputs, scalars)]
    acc = xs[0]
    for x in xs[1:]:
        acc = step(acc, x, b.RedOp.Sum, dt)
    return acc.astype(t)


def make_input(dt, count, rank, salt):
    """Deterministic per-(type, rank, salt) data: integers over the full range (so sums and
    products wrap); floats as sign * magnitude in [0.25, 4] on a grid that fp16/bf16/fp8 round
    (so steps round but stay in range), never -0; fp8 also gets a few large values that saturate."""
    t = NP_TYPES[dt]
    rng = np.random.default_rng([int(dt), count, rank, salt])
    if is_int(dt):
        info = np.iinfo(t)
        return rng.integers(info.min, info.max, size=count, dtype=t, endpoint=True)
    mag = rng.uniform(0.25, 4.0, size=count).astype(np.float32)
    sign = np.where(rng.random(count) < 0.5, -1.0, 1.0).astype(np.float32)
    x = to_type(mag * sign, dt)
    if dt in FP8 and count > 4:
        x[::5] = to_type(np.float32(FP8[dt] * 0.75) * sign[::5], dt)
    return x


def same_bits(a, c):
    return np.asarray(a).tobytes() == np.asarray(c).tobytes()
