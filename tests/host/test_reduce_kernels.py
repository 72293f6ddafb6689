"""C-level tests of the host backend's reduction kernels and conversions (src/host/reduce.c).

tests/host/reduce_kernels_test.c is linked with src/host/reduce.c (compiled with the library's
flags, and with UBSan where available: tests/host/meson.build) into a small driver that dumps
conversion tables and reduction results; everything expected here comes from numpy and
ml_dtypes (or from values worked out by hand), following docs/host-backend.md#reductions-and-numerics:

* conversions: exhaustive over every half, bf16 and fp8 code, plus float inputs at every tie and
  boundary of each format, under all four rounding modes (the C code must not depend on them);
* reductions: every datatype x op at 1..4 ranks, with a reference that combines two values at a
  time in rank order and rounds to the element type after each step.

NaN sign and payload are never compared, only NaN-ness.
"""

import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import artefacts

ml_dtypes = pytest.importorskip("ml_dtypes")

ROOT = Path(__file__).resolve().parents[2]
REDUCE_C = ROOT / "src" / "host" / "reduce.c"

SUM, PROD, MAX, MIN, AVG, PREMULSUM = range(6)
OP_NAMES = ["sum", "prod", "max", "min", "avg", "premulsum"]
OP_BIAS = 100
FLAG_INPLACE, FLAG_UNALIGNED, FLAG_SELF_STEP, FLAG_PAIR = 1, 2, 4, 8
OCP, FNUZ = 0, 1
HEADER = struct.Struct("=iiiiqii")


# --------------------------------------------------------------------------------------------
# Building and running the driver
# --------------------------------------------------------------------------------------------


class Driver:
    def __init__(self, exe, workdir):
        self.exe = str(exe)
        self.dir = Path(workdir)
        self.calls = 0

    def _run(self, *args):
        subprocess.run([self.exe, *map(str, args)], check=True, timeout=60, env=artefacts.tool_env())

    def _paths(self):
        self.calls += 1
        return self.dir / f"in{self.calls}.bin", self.dir / f"out{self.calls}.bin"

    def sizes(self):
        out = subprocess.run([self.exe, "sizes"], check=True, capture_output=True, text=True, timeout=60,
                             env=artefacts.tool_env())
        return [int(x) for x in out.stdout.split()]

    def decode(self):
        _, out = self._paths()
        self._run("decode", out)
        t = np.fromfile(out, dtype=np.float32)
        assert t.size == 2 * 65536 + 4 * 256
        fp8 = t[131072:].reshape(4, 256)
        return {
            "half": t[:65536],
            "bf16": t[65536:131072],
            ("e4m3", OCP): fp8[0],
            ("e5m2", OCP): fp8[1],
            ("e4m3", FNUZ): fp8[2],
            ("e5m2", FNUZ): fp8[3],
        }

    def encode(self, values):
        """All conversions of float32 `values`; one dict per rounding mode (nearest first)."""
        values = np.ascontiguousarray(values, dtype=np.float32)
        inp, out = self._paths()
        values.tofile(inp)
        self._run("encode", inp, out)
        raw = np.fromfile(out, dtype=np.uint8)
        n = values.size
        per_mode = 8 * n
        assert raw.size == 4 * per_mode
        modes = []
        for m in range(4):
            chunk = raw[m * per_mode : (m + 1) * per_mode]
            fp8 = chunk[4 * n :].reshape(4, n)
            modes.append(
                {
                    "half": chunk[: 2 * n].view(np.uint16),
                    "bf16": chunk[2 * n : 4 * n].view(np.uint16),
                    ("e4m3", OCP): fp8[0],
                    ("e5m2", OCP): fp8[1],
                    ("e4m3", FNUZ): fp8[2],
                    ("e5m2", FNUZ): fp8[3],
                }
            )
        return modes

    def reduce(self, records):
        """records: (dtype_info, op, inputs, scalars, flags) -> list of result bit arrays."""
        inp, out = self._paths()
        blob = bytearray()
        for t, op, inputs, scalars, flags in records:
            count = inputs[0].size
            blob += HEADER.pack(t.dt, t.fp8, op, len(inputs), count, flags, 0)
            for s in scalars:
                blob += np.asarray(s, dtype=t.bits).tobytes().ljust(8, b"\0")
            for x in inputs:
                assert x.dtype == t.bits and x.size == count
                blob += x.tobytes()
        inp.write_bytes(bytes(blob))
        self._run("reduce", inp, out)
        raw = out.read_bytes()
        results, pos = [], 0
        for t, _, inputs, _, _ in records:
            nbytes = inputs[0].size * t.bits.itemsize
            results.append(np.frombuffer(raw[pos : pos + nbytes], dtype=t.bits).copy())
            pos += nbytes
        assert pos == len(raw)
        return results


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    return Driver(artefacts.artefact("tests/host/reduce_kernels_test"), tmp_path_factory.mktemp("reduce_kernels"))


def test_reduce_c_is_plain_c():
    """No compiler extension types and no Python: the kernels build anywhere the library does
    (that they compile without warnings is test_host_engine's check of every host source)."""
    src = REDUCE_C.read_text()
    assert "_Float16" not in src and "Python.h" not in src


def test_type_sizes(driver):
    # dt = -1 .. 12: nothing outside [0, ncclNumTypes)
    assert driver.sizes() == [0, 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1, 0]


# --------------------------------------------------------------------------------------------
# Formats and reference roundings
# --------------------------------------------------------------------------------------------

BF16 = ml_dtypes.bfloat16
FP8_TYPES = {
    ("e4m3", OCP): ml_dtypes.float8_e4m3fn,
    ("e5m2", OCP): ml_dtypes.float8_e5m2,
    ("e4m3", FNUZ): ml_dtypes.float8_e4m3fnuz,
    ("e5m2", FNUZ): ml_dtypes.float8_e5m2fnuz,
}
FP8_MAX = {("e4m3", OCP): 448.0, ("e5m2", OCP): 57344.0, ("e4m3", FNUZ): 240.0, ("e5m2", FNUZ): 57344.0}
FORMATS = ["half", "bf16", *FP8_TYPES]
VALUE_TYPE = {"half": np.float16, "bf16": BF16, **FP8_TYPES}
BITS_TYPE = {"half": np.uint16, "bf16": np.uint16, **{k: np.uint8 for k in FP8_TYPES}}


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def to_fp8_ocp(f, fmt):
    """CUDA satfinite: overflow and +-Inf to +-max, NaN stays NaN. Clipping before rounding gives
    the same result, since no value within [-max, max] rounds past max."""
    f = _f32(f)
    m = FP8_MAX[fmt]
    with np.errstate(invalid="ignore"):
        c = np.where(np.isnan(f), f, np.clip(f, -m, m))
    return c.astype(FP8_TYPES[fmt]).view(np.uint8)


def to_fp8_fnuz(f, fmt):
    """RCCL with clipping: NaN and +-Inf to 0x80, overflow clipped to +-max (ml_dtypes already
    maps -0 and negative underflow to +0)."""
    f = _f32(f)
    bad = ~np.isfinite(f)
    m = FP8_MAX[fmt]
    r = np.clip(np.where(bad, 0, f), -m, m).astype(FP8_TYPES[fmt]).view(np.uint8).copy()
    r[bad] = 0x80
    return r


def convert(f, fmt):
    """Reference float32 -> format conversion of docs/host-backend.md#reductions-and-numerics (bits)."""
    f = _f32(f)
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt == "half":
            return f.astype(np.float16).view(np.uint16)
        if fmt == "bf16":
            return f.astype(BF16).view(np.uint16)
    return to_fp8_ocp(f, fmt) if fmt[1] == OCP else to_fp8_fnuz(f, fmt)


def widen(bits, fmt):
    return np.asarray(bits).view(VALUE_TYPE[fmt]).astype(np.float32)


def assert_same_float(got_bits, want_bits, fmt, what, context=None):
    """Bit equality, except that any NaN matches any NaN."""
    got_bits, want_bits = np.asarray(got_bits), np.asarray(want_bits)
    gn, wn = np.isnan(widen(got_bits, fmt)), np.isnan(widen(want_bits, fmt))
    bad = np.nonzero((gn != wn) | (~wn & (got_bits != want_bits)))[0]
    if bad.size:
        i = bad[0]
        extra = "" if context is None else f" input {context[i]!r} ({np.float32(context[i]).view(np.uint32):#010x})"
        pytest.fail(
            f"{what} [{fmt}]: {bad.size} mismatches; first at {i}:{extra} "
            f"got {int(got_bits[i]):#x}, want {int(want_bits[i]):#x}"
        )


# --------------------------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------------------------


def _all_codes(fmt):
    n = 65536 if BITS_TYPE[fmt] == np.uint16 else 256
    return np.arange(n, dtype=np.int64).astype(BITS_TYPE[fmt])


@pytest.fixture(scope="module")
def decoded(driver):
    return driver.decode()


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_decode_exhaustive(decoded, fmt):
    got = decoded[fmt]
    want = widen(_all_codes(fmt), fmt)
    gn, wn = np.isnan(got), np.isnan(want)
    assert np.array_equal(gn, wn), np.nonzero(gn != wn)[0][:10]
    bad = np.nonzero(~wn & (got.view(np.uint32) != want.view(np.uint32)))[0]
    assert bad.size == 0, [(hex(int(i)), got[i], want[i]) for i in bad[:10]]


def test_decode_nan_and_inf_codes(decoded):
    # Section 7.1, written out by hand rather than taken from ml_dtypes.
    e4 = decoded[("e4m3", OCP)]
    assert [int(i) for i in np.nonzero(np.isnan(e4))[0]] == [0x7F, 0xFF] and not np.isinf(e4).any()
    e5 = decoded[("e5m2", OCP)]
    assert [int(i) for i in np.nonzero(np.isnan(e5))[0]] == [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]
    assert e5[0x7C] == np.inf and e5[0xFC] == -np.inf and e5[0x7B] == 57344.0
    assert e4[0x7E] == 448.0 and e4[0x01] == 2.0**-9 and e4[0x08] == 2.0**-6
    assert np.signbit(e4[0x80]) and e4[0x80] == 0
    for fmt, mx, sub in [(("e4m3", FNUZ), 240.0, 2.0**-10), (("e5m2", FNUZ), 57344.0, 2.0**-17)]:
        t = decoded[fmt]
        assert [int(i) for i in np.nonzero(np.isnan(t))[0]] == [0x80] and not np.isinf(t).any()
        assert t[0x7F] == mx and t[0xFF] == -mx and t[0x01] == sub and t[0x40] == 1.0


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_roundtrip_exhaustive(driver, decoded, fmt):
    codes = _all_codes(fmt)
    got = driver.encode(decoded[fmt])[0][fmt]
    want = codes.copy()
    if fmt == ("e5m2", OCP):
        want[0x7C], want[0xFC] = 0x7B, 0xFB  # satfinite: Inf -> max finite, even for e5m2
    assert_same_float(got, want, fmt, "float(x) -> x round trip")


def _finite_sorted_values(fmt):
    with np.errstate(invalid="ignore"):
        v = widen(_all_codes(fmt), fmt).astype(np.float64)
    v = v[np.isfinite(v)]
    return np.unique(v)  # sorted; -0 and +0 merge, which is fine for midpoints


def _boundary_inputs():
    """Float32 inputs at every rounding decision of every format: each value, each midpoint
    between neighbours (the ties), one float ulp either side of it, and the overflow edges."""
    parts = []
    for fmt in FORMATS:
        v = _finite_sorted_values(fmt)
        mids = (v[:-1] + v[1:]) / 2  # exact in float64; exact in float32 too (<= 12 bits)
        mx = v[-1]
        ulp = v[-1] - v[-2]
        edges = np.array([mx + ulp / 2, mx + ulp, mx * 2, mx + ulp / 4, mx + 3 * ulp / 4])
        with np.errstate(over="ignore"):  # bf16's max * 2 is Inf in float32: still an input
            vals = np.concatenate([v, mids, edges, -edges]).astype(np.float32)
        parts += [vals, np.nextafter(vals, np.float32(np.inf)), np.nextafter(vals, np.float32(-np.inf))]
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4028235e38, -3.4028235e38, 1.1754944e-38, 1e-45, -1e-45],
        dtype=np.float32,
    )
    rng = np.random.default_rng(7)
    random_bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    moderate = (rng.standard_normal(50_000) * 10.0 ** rng.uniform(-8, 6, 50_000)).astype(np.float32)
    return np.concatenate(parts + [specials, random_bits, moderate])


@pytest.fixture(scope="module")
def encoded(driver):
    inputs = _boundary_inputs()
    return inputs, driver.encode(inputs)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_encode_ties_boundaries_random(encoded, fmt):
    inputs, modes = encoded
    want = convert(inputs, fmt)
    assert_same_float(modes[0][fmt], want, fmt, "float -> format", context=inputs)
    for m, name in zip(modes[1:], ["upward", "downward", "toward zero"]):
        assert np.array_equal(m[fmt], modes[0][fmt]), f"conversion depends on rounding mode ({name})"


NAN = float("nan")
# (float32 input, format, expected bits or None for "a NaN"), worked out by hand from
# docs/host-backend.md#reductions-and-numerics.
HAND_CONVERSIONS = [
    (65504.0, "half", 0x7BFF),
    (np.nextafter(np.float32(65520.0), np.float32(0)), "half", 0x7BFF),
    (65520.0, "half", 0x7C00),  # tie above max rounds to even: Inf
    (-np.inf, "half", 0xFC00),
    (2.0**-24, "half", 0x0001),
    (2.0**-25, "half", 0x0000),  # tie to even: zero
    (-(2.0**-25), "half", 0x8000),
    (3 * 2.0**-25, "half", 0x0002),
    (1 + 2.0**-11, "half", 0x3C00),
    (1 + 3 * 2.0**-11, "half", 0x3C02),
    (NAN, "half", None),
    (1 + 2.0**-8, "bf16", 0x3F80),
    (1 + 3 * 2.0**-8, "bf16", 0x3F82),
    (3.4028235e38, "bf16", 0x7F80),  # FLT_MAX rounds past bf16's max: Inf
    (-np.inf, "bf16", 0xFF80),
    (NAN, "bf16", None),
    (1.0, ("e4m3", OCP), 0x38),
    (448.0, ("e4m3", OCP), 0x7E),
    (464.0, ("e4m3", OCP), 0x7E),
    (1e6, ("e4m3", OCP), 0x7E),
    (np.inf, ("e4m3", OCP), 0x7E),
    (-np.inf, ("e4m3", OCP), 0xFE),
    (NAN, ("e4m3", OCP), None),
    (2.0**-9, ("e4m3", OCP), 0x01),
    (2.0**-10, ("e4m3", OCP), 0x00),
    (-(2.0**-10), ("e4m3", OCP), 0x80),  # OCP keeps -0
    (1 / 3, ("e4m3", OCP), 0x2B),  # 0.34375
    (1.0, ("e5m2", OCP), 0x3C),
    (57344.0, ("e5m2", OCP), 0x7B),
    (61440.0, ("e5m2", OCP), 0x7B),
    (np.inf, ("e5m2", OCP), 0x7B),  # saturate Inf even though e5m2 has an Inf
    (-np.inf, ("e5m2", OCP), 0xFB),
    (NAN, ("e5m2", OCP), None),
    (2.0**-16, ("e5m2", OCP), 0x01),
    (1.0, ("e4m3", FNUZ), 0x40),
    (240.0, ("e4m3", FNUZ), 0x7F),
    (1e6, ("e4m3", FNUZ), 0x7F),
    (-1e6, ("e4m3", FNUZ), 0xFF),
    (np.inf, ("e4m3", FNUZ), 0x80),
    (-np.inf, ("e4m3", FNUZ), 0x80),
    (NAN, ("e4m3", FNUZ), 0x80),
    (-0.0, ("e4m3", FNUZ), 0x00),
    (-(2.0**-11), ("e4m3", FNUZ), 0x00),  # tie to zero, and zero is +0
    (-(2.0**-10), ("e4m3", FNUZ), 0x81),
    (1.0, ("e5m2", FNUZ), 0x40),
    (57344.0, ("e5m2", FNUZ), 0x7F),
    (1e30, ("e5m2", FNUZ), 0x7F),
    (np.inf, ("e5m2", FNUZ), 0x80),
    (2.0**-17, ("e5m2", FNUZ), 0x01),
    (-(2.0**-19), ("e5m2", FNUZ), 0x00),
]


def test_encode_hand_values(driver):
    inputs = np.array([x for x, _, _ in HAND_CONVERSIONS], dtype=np.float32)
    got = driver.encode(inputs)[0]
    for i, (x, fmt, want) in enumerate(HAND_CONVERSIONS):
        g = int(got[fmt][i])
        if want is None:
            assert np.isnan(widen(np.array([g], dtype=BITS_TYPE[fmt]), fmt))[0], (x, fmt, hex(g))
        else:
            assert g == want, (x, fmt, hex(g), hex(want))


# --------------------------------------------------------------------------------------------
# Reductions: reference model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DType:
    name: str
    dt: int
    fp8: int
    kind: str  # "int", "native", "narrow"
    bits: np.dtype  # storage as raw bits
    value: object  # signed integer type, native float type, or narrow format key

    def __str__(self):
        return self.name


def _d(name, dt, kind, bits, value, fp8=OCP):
    return DType(name, dt, fp8, kind, np.dtype(bits), value)


DTYPES = [
    _d("int8", 0, "int", np.uint8, np.int8),
    _d("uint8", 1, "int", np.uint8, np.uint8),
    _d("int32", 2, "int", np.uint32, np.int32),
    _d("uint32", 3, "int", np.uint32, np.uint32),
    _d("int64", 4, "int", np.uint64, np.int64),
    _d("uint64", 5, "int", np.uint64, np.uint64),
    _d("float16", 6, "narrow", np.uint16, "half"),
    _d("float32", 7, "native", np.uint32, np.float32),
    _d("float64", 8, "native", np.uint64, np.float64),
    _d("bfloat16", 9, "narrow", np.uint16, "bf16"),
    _d("e4m3", 10, "narrow", np.uint8, ("e4m3", OCP)),
    _d("e5m2", 11, "narrow", np.uint8, ("e5m2", OCP)),
    _d("e4m3_fnuz", 10, "narrow", np.uint8, ("e4m3", FNUZ), FNUZ),
    _d("e5m2_fnuz", 11, "narrow", np.uint8, ("e5m2", FNUZ), FNUZ),
]
BY_NAME = {t.name: t for t in DTYPES}


def values(t, bits):
    """Numbers for the bit arrays: signed view, native floats, or float32 for narrow types."""
    bits = np.asarray(bits, dtype=t.bits)
    if t.kind == "narrow":
        return widen(bits, t.value)
    return bits.view(t.value)


def round_step(t, f):
    """One arithmetic result (float32 for narrow types) back to the element type,
    docs/host-backend.md#reductions-and-numerics:
    fp16/bf16 from float; OCP fp8 rounded to half first (the operation runs in half), then
    saturated; FNUZ fp8 from float with clipping."""
    if t.value in ("half", "bf16") or t.value[1] == FNUZ:
        return convert(f, t.value)
    return to_fp8_ocp(_f32(f).astype(np.float16).astype(np.float32), t.value)


def add(t, a, b):
    with np.errstate(all="ignore"):
        if t.kind == "int":
            return a + b  # unsigned numpy arrays wrap modulo 2^bits
        if t.kind == "native":
            return (values(t, a) + values(t, b)).view(t.bits)
        return round_step(t, values(t, a) + values(t, b))


def mul(t, a, b):
    with np.errstate(all="ignore"):
        if t.kind == "int":
            return a * b
        if t.kind == "native":
            return (values(t, a) * values(t, b)).view(t.bits)
        return round_step(t, values(t, a) * values(t, b))


def pick(t, a, b, want_max):
    va, vb = values(t, a), values(t, b)
    if t.kind == "int":
        take_b = vb > va if want_max else vb < va
        return np.where(take_b, b, a)
    if t.kind == "native":
        return (np.fmax(va, vb) if want_max else np.fmin(va, vb)).view(t.bits)
    # NaN-suppressing, -0 < +0, then the (exact, except OCP e5m2's Inf saturating) back-conversion.
    na, nb = np.isnan(va), np.isnan(vb)
    if want_max:
        better = (vb > va) | ((vb == va) & np.signbit(va) & ~np.signbit(vb))
    else:
        better = (vb < va) | ((vb == va) & ~np.signbit(va) & np.signbit(vb))
    take_b = na | (~nb & better)
    return convert(np.where(take_b, vb, va), t.value)


def avg_scale(t, n):
    """Section 7.4: 1/n in the element type, converted from (float)(1.0/n) (double: 1.0/n)."""
    if t.value is np.float64:
        return np.array([1.0 / n], dtype=np.float64).view(t.bits)
    f = np.array([1.0 / n], dtype=np.float32)
    if t.kind == "native":
        return f.view(t.bits)
    return convert(f, t.value)  # fp8 directly from float, not through half


def int_avg_finish(t, acc, n):
    """Division of the wrapped sum rounding toward zero (magnitude divided, sign restored)."""
    nbits = 8 * t.bits.itemsize
    out = []
    for v in values(t, acc).tolist():
        q = abs(v) // n
        out.append((-q if v < 0 else q) % (1 << nbits))
    return np.array(out, dtype=t.bits)


def reference(t, op, inputs, scalars, flags):
    """Rank order, two values at a time, rounded to the type after every step."""
    n = len(inputs)
    count = inputs[0].size

    def pre(x, r):
        if op == PREMULSUM:
            return mul(t, x, np.full(count, scalars[r], dtype=t.bits))
        if op == AVG and t.kind != "int":
            return mul(t, x, np.full(count, avg_scale(t, n)[0], dtype=t.bits))
        return x

    def combine(a, x):
        if op == PROD:
            return mul(t, a, x)
        if op in (MAX, MIN):
            return pick(t, a, x, op == MAX)
        return add(t, a, x)

    acc = pre(inputs[0], 0)
    for r in range(1, n):
        acc = combine(acc, pre(inputs[r], r))
    if flags & FLAG_SELF_STEP:
        acc = combine(acc, pre(acc, n - 1))
    if op == AVG and t.kind == "int":
        acc = int_avg_finish(t, acc, n)
    return np.asarray(acc, dtype=t.bits)


def assert_result(t, got, want, what, inputs=None, zero_sign=True):
    if t.kind == "int":
        bad = np.nonzero(got != want)[0]
    else:
        vg, vw = values(t, got), values(t, want)
        gn, wn = np.isnan(vg), np.isnan(vw)
        ok = (gn == wn) & (wn | (got == want) | (not zero_sign and (vg == vw)))
        bad = np.nonzero(~ok)[0]
    if bad.size:
        i = bad[0]
        ins = "" if inputs is None else " inputs " + ", ".join(f"{int(x[i]):#x}" for x in inputs)
        pytest.fail(f"{what}: {bad.size} mismatches; first at {i}:{ins} got {int(got[i]):#x}, want {int(want[i]):#x}")


# --------------------------------------------------------------------------------------------
# Reductions: inputs
# --------------------------------------------------------------------------------------------

COUNT = 384


def from_floats(t, f):
    f = np.asarray(f, dtype=np.float64)
    if t.kind == "native":
        return f.astype(t.value).view(t.bits)
    return convert(f.astype(np.float32), t.value)


def special_values(t):
    if t.kind == "int":
        info = np.iinfo(t.value)
        vals = [info.min, info.max, 0, 1, 2, info.max - 1, info.min + 1]
        if info.min < 0:
            vals += [-1, -2, -7]
        return np.array(vals, dtype=t.value).view(t.bits)
    if t.kind == "native":
        info = np.finfo(t.value)
        vals = [0.0, -0.0, np.nan, np.inf, -np.inf, info.max, -info.max, info.smallest_subnormal, 1.0, -1.0]
        return np.array(vals, dtype=t.value).view(t.bits)
    codes = {
        "half": [0x0000, 0x8000, 0x7E00, 0x7C00, 0xFC00, 0x7BFF, 0xFBFF, 0x0001, 0x3C00],
        "bf16": [0x0000, 0x8000, 0x7FC0, 0x7F80, 0xFF80, 0x7F7F, 0xFF7F, 0x0001, 0x3F80],
        ("e4m3", OCP): [0x00, 0x80, 0x7F, 0xFF, 0x7E, 0xFE, 0x01, 0x81, 0x38],
        ("e5m2", OCP): [0x00, 0x80, 0x7E, 0x7C, 0xFC, 0x7B, 0xFB, 0x01, 0x3C],
        ("e4m3", FNUZ): [0x00, 0x80, 0x7F, 0xFF, 0x01, 0x81, 0x40],
        ("e5m2", FNUZ): [0x00, 0x80, 0x7F, 0xFF, 0x01, 0x81, 0x40],
    }[t.value]
    return np.array(codes, dtype=t.bits)


def make_inputs(t, rng, n):
    """Per rank: specials (rotated per rank so they meet each other), random bit patterns, and
    moderate values, so sums round, products overflow and NaNs/Infs/zeros meet numbers."""
    out = []
    specials = special_values(t)
    for r in range(n):
        raw = np.frombuffer(rng.bytes(COUNT * t.bits.itemsize), dtype=t.bits).copy()
        third = COUNT // 3
        if t.kind == "int":
            small = rng.integers(-9, 10, size=COUNT).astype(np.int64)
            raw[third : 2 * third] = small[third : 2 * third].astype(t.value).view(t.bits)
        else:
            mag = 10.0 ** rng.uniform(-3, 3, size=COUNT) if t.kind == "native" else 2.0 ** rng.uniform(-6, 6, COUNT)
            moderate = from_floats(t, rng.standard_normal(COUNT) * mag)
            raw[third:] = moderate[third:]
            if t.kind == "native":
                # random bit patterns of float32/64 are mostly huge or tiny; keep a few
                raw[third // 2 : third] = from_floats(t, rng.integers(-50, 50, third - third // 2))
        # every pair of specials meets between ranks 0 and 1; later ranks see them shifted
        k = specials.size
        grid = np.arange(k * k)
        raw[: k * k] = specials[grid % k if r == 0 else grid // k if r == 1 else (grid + r) % k]
        out.append(raw)
    return out


def make_scalars(t, rng, n):
    if t.kind == "int":
        return [np.frombuffer(rng.bytes(t.bits.itemsize), dtype=t.bits)[0] for _ in range(n)]
    pool = [1.5, -0.3, 1000.0, 0.1, -2.0, 3.0, 0.0078125]
    picks = rng.choice(len(pool), size=n, replace=False)
    return list(from_floats(t, [pool[i] for i in picks]))


# --------------------------------------------------------------------------------------------
# Reductions: tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", DTYPES, ids=str)
def test_every_op_and_rank_count(driver, t):
    rng = np.random.default_rng(1000 + DTYPES.index(t))
    records, refs = [], []
    for op in range(6):
        for n in (1, 2, 3, 4):
            for variant in range(3):
                inputs = make_inputs(t, rng, n)
                scalars = make_scalars(t, rng, n)
                # variant 0: plain; variant 1: in-place prepare / odd addresses / acc == in step;
                # variant 2: ranks 0 and 1 folded by host_reduce_pair (odd addresses every other n)
                flags = 0 if variant == 0 else 1 + (op + n) % 7 if variant == 1 else FLAG_PAIR | (n % 2) * FLAG_UNALIGNED
                records.append((t, op, inputs, scalars, flags))
                refs.append(reference(t, op, inputs, scalars, flags))
    results = driver.reduce(records)
    for (_, op, inputs, scalars, flags), got, want in zip(records, results, refs):
        what = f"{t} {OP_NAMES[op]} n={len(inputs)} flags={flags}"
        # C's fmax/fmin may return either zero for (-0, +0); only narrow types fix -0 < +0.
        zero_sign = not (t.kind == "native" and op in (MAX, MIN))
        assert_result(t, got, want, what, inputs, zero_sign=zero_sign)


@pytest.mark.parametrize("t", DTYPES, ids=str)
def test_bias_add(driver, t):
    rng = np.random.default_rng(2000 + DTYPES.index(t))
    records, refs = [], []
    for flags in (0, FLAG_UNALIGNED):
        acc, bias = make_inputs(t, rng, 2)
        records.append((t, OP_BIAS, [acc, bias], [0, 0], flags))
        refs.append(add(t, acc, bias))  # one rounding of acc + bias, like a Sum step
    for rec, got, want in zip(records, driver.reduce(records), refs):
        assert_result(t, got, want, f"{t} bias add", rec[2])


def _run_one(driver, t, op, rows, scalars=None, flags=0):
    """rows: per-rank lists of numbers (or ("bits", code)) -> result bits."""

    def enc(v):
        if isinstance(v, tuple):
            return np.array([v[1]], dtype=t.bits)[0]
        if t.kind == "int":
            return np.array([v], dtype=t.value).view(t.bits)[0]
        return from_floats(t, [v])[0]

    inputs = [np.array([enc(v) for v in row], dtype=t.bits) for row in rows]
    sc = [enc(s) for s in scalars] if scalars else [0] * len(rows)
    return driver.reduce([(t, op, inputs, sc, flags)])[0]


def test_integer_wraparound(driver):
    assert values(BY_NAME["int8"], _run_one(driver, BY_NAME["int8"], SUM, [[127, -128], [1, -1]])).tolist() == [-128, 127]
    assert _run_one(driver, BY_NAME["uint8"], SUM, [[200], [100]]).tolist() == [44]
    assert values(BY_NAME["int8"], _run_one(driver, BY_NAME["int8"], PROD, [[16, -128], [16, -1]])).tolist() == [0, -128]
    assert _run_one(driver, BY_NAME["uint32"], PROD, [[0x10000], [0x10000]]).tolist() == [0]
    i64 = BY_NAME["int64"]
    got = values(i64, _run_one(driver, i64, SUM, [[2**63 - 1], [2**63 - 1], [2]]))
    assert got.tolist() == [0]
    u64 = BY_NAME["uint64"]
    assert _run_one(driver, u64, PROD, [[2**63 + 1], [3]]).tolist() == [(3 * (2**63 + 1)) % 2**64]
    # Max/Min follow the type's signedness
    assert values(BY_NAME["int32"], _run_one(driver, BY_NAME["int32"], MAX, [[-1], [1]])).tolist() == [1]
    assert _run_one(driver, BY_NAME["uint32"], MAX, [[0xFFFFFFFF], [1]]).tolist() == [0xFFFFFFFF]


def test_integer_avg_rounds_toward_zero(driver):
    i32 = BY_NAME["int32"]
    assert values(i32, _run_one(driver, i32, AVG, [[-7, 7, -8], [0, 0, 0], [0, 0, 0]])).tolist() == [-2, 2, -2]
    # wrapped sum INT32_MIN: magnitude 2^31 / 3, sign restored
    assert values(i32, _run_one(driver, i32, AVG, [[2**31 - 1], [1], [0]])).tolist() == [-715827882]
    # int8: -128 + -1 wraps to +127, so the average takes the wrapped sum's sign
    assert values(BY_NAME["int8"], _run_one(driver, BY_NAME["int8"], AVG, [[-128], [-1]])).tolist() == [63]
    assert _run_one(driver, BY_NAME["uint32"], AVG, [[0xFFFFFFFF], [1]]).tolist() == [0]
    i64 = BY_NAME["int64"]
    assert values(i64, _run_one(driver, i64, AVG, [[-1], [-1], [-1], [-2]])).tolist() == [-1]
    assert values(i64, _run_one(driver, i64, AVG, [[-(2**63)]])).tolist() == [-(2**63)]


def test_float_avg_premultiplies(driver):
    # e4m3: 1/3 -> 0.34375, each 7 * 0.34375 = 2.40625 -> 2.5, so three 7.0s average to 7.5
    for name, want in [("e4m3", 0x4F), ("e4m3_fnuz", 0x57)]:
        t = BY_NAME[name]
        got = _run_one(driver, t, AVG, [[7.0], [7.0], [7.0]])
        assert int(got[0]) == want and values(t, got)[0] == 7.5, (name, hex(int(got[0])))
    # float32: three 0.1f -> 0.1f * (float)(1/3) summed is 0x3DCCCCCE; dividing the sum would
    # give 0x3DCCCCCD
    f32 = BY_NAME["float32"]
    assert int(_run_one(driver, f32, AVG, [[np.float32(0.1)]] * 3)[0]) == 0x3DCCCCCE


def test_premulsum_per_rank_scalars(driver):
    i32 = BY_NAME["int32"]
    assert values(i32, _run_one(driver, i32, PREMULSUM, [[5], [7]], scalars=[2, 3])).tolist() == [31]
    f32 = BY_NAME["float32"]
    assert values(f32, _run_one(driver, f32, PREMULSUM, [[3.0], [5.0]], scalars=[0.5, 2.0])).tolist() == [11.5]
    # e5m2 OCP: 57344 * 2 overflows half -> saturates to 57344; plus 1 * 1 stays 57344
    e5 = BY_NAME["e5m2"]
    assert int(_run_one(driver, e5, PREMULSUM, [[57344.0], [1.0]], scalars=[2.0, 1.0])[0]) == 0x7B
    # e4m3 FNUZ: 240 * 2 clips to 240 (computed in float, no half Inf on the way)
    e4f = BY_NAME["e4m3_fnuz"]
    assert int(_run_one(driver, e4f, PREMULSUM, [[240.0], [0.0]], scalars=[2.0, 1.0])[0]) == 0x7F


@pytest.mark.parametrize("name", ["float16", "bfloat16", "e4m3", "e5m2"])
def test_narrow_max_min_signed_zero(driver, name):
    t = BY_NAME[name]
    sign = 0x8000 if t.bits.itemsize == 2 else 0x80
    pz, nz = ("bits", 0), ("bits", sign)
    got_max = _run_one(driver, t, MAX, [[pz, nz], [nz, pz]])
    got_min = _run_one(driver, t, MIN, [[pz, nz], [nz, pz]])
    assert got_max.tolist() == [0, 0] and got_min.tolist() == [sign, sign]


NAN_CODES = {"half": 0x7E00, "bf16": 0x7FC0, ("e4m3", OCP): 0xFF, ("e5m2", OCP): 0x7D, ("e4m3", FNUZ): 0x80, ("e5m2", FNUZ): 0x80}


@pytest.mark.parametrize("t", [t for t in DTYPES if t.kind != "int"], ids=str)
def test_max_min_suppress_nan(driver, t):
    nan = ("bits", NAN_CODES[t.value]) if t.kind == "narrow" else float("nan")
    rows = [[nan, 1.0, nan, -2.0], [1.0, nan, nan, nan], [-2.0, -2.0, nan, 1.0]]
    for op, want in ((MAX, 1.0), (MIN, -2.0)):
        got = values(t, _run_one(driver, t, op, rows))
        assert got[0] == want and got[1] == want and np.isnan(got[2]) and got[3] == want, (OP_NAMES[op], got)


def test_saturation_in_steps(driver):
    e5, e4, e4f = BY_NAME["e5m2"], BY_NAME["e4m3"], BY_NAME["e4m3_fnuz"]
    assert _run_one(driver, e5, SUM, [[57344.0], [57344.0]]).tolist() == [0x7B]  # half Inf -> max
    assert _run_one(driver, e5, SUM, [[("bits", 0x7C)], [1.0]]).tolist() == [0x7B]  # Inf input too
    assert _run_one(driver, e5, MAX, [[("bits", 0x7C)], [1.0]]).tolist() == [0x7B]
    assert _run_one(driver, e5, SUM, [[("bits", 0x7C)]]).tolist() == [0x7C]  # one rank: a copy
    assert _run_one(driver, e4, SUM, [[448.0], [448.0]]).tolist() == [0x7E]
    assert _run_one(driver, e4, PROD, [[-448.0], [2.0]]).tolist() == [0xFE]
    assert _run_one(driver, e4f, SUM, [[240.0], [240.0]]).tolist() == [0x7F]
    assert _run_one(driver, e4f, PROD, [[16.0], [-16.0]]).tolist() == [0xFF]
    assert _run_one(driver, BY_NAME["float16"], SUM, [[65504.0], [65504.0]]).tolist() == [0x7C00]  # IEEE: Inf
    assert _run_one(driver, BY_NAME["bfloat16"], PROD, [[3e38], [2.0]]).tolist() == [0x7F80]
    # bias: one rounding, same rules
    acc = [np.array([0x7B], dtype=np.uint8), np.array([0x7B], dtype=np.uint8)]
    assert driver.reduce([(e5, OP_BIAS, acc, [0, 0], 0)])[0].tolist() == [0x7B]
