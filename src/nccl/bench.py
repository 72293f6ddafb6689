"""python -m nccl.bench: bandwidth of every collective, nccl-tests style, with a check per size.

    python -m nccl.run -n 2 -m nccl.bench -b 8 -e 128M -f 2 -d float32 -o sum -n 20 -w 5
    mpirun -n 2 python -m nccl.bench -c all --json results.json --plot busbw.png

Options (python -m nccl.bench --help lists them): -c collectives, -b/-e smallest and largest size,
-f step factor, -d datatypes, -o reduction ops, -r root, -n iterations, -w warmup iterations,
--json PATH, --plot PATH.

Rank 0 prints nccl-tests' table: size, count, type, redop, root, then time, algbw, busbw and
#wrong out-of-place and again in-place, then "# Out of bounds values" and "# Avg bus bandwidth"
(the mean busbw of every row, both groups). Under python -m nccl.run the table comes without the
rank prefix. "size" is the bytes of the whole operation as nccl-tests counts them: the buffer of
allreduce, reduce, broadcast and sendrecv; the gathered (or scattered, or exchanged) total of the
others, so each rank's block is size / nranks. time is the slowest rank's mean per iteration.
busbw scales algbw (size / time) by the collective's factor (allreduce 2(n-1)/n; allgather,
reduce_scatter, alltoall, gather, scatter (n-1)/n; others 1). In-place uses one buffer as NCCL
defines it (the receive buffer, or this rank's block of it, is the send buffer); alltoall and
sendrecv have none (N/A). #wrong counts, over all ranks, the elements that differ from a
reference computed on every rank from every rank's inputs, after one more call from fresh inputs.

Without a launcher the bench runs on 1 rank and says so. Bad sizes, unknown names and
combinations the bench cannot check (fp8 with prod or avg; bfloat16 and fp8 without ml_dtypes)
are a one-line error with exit status 2. Exit status 1 when any #wrong is not 0.
"""

import argparse
import importlib.util
import json
import os
import sys
import time

import numpy as np

from nccl import _ext
from nccl._collective_kinds import COLLECTIVES as _KINDS

__all__ = ["main", "parse_args", "parse_size", "COLLECTIVES"]

PROG = "nccl.bench"
EXIT_USAGE = 2

# What each collective is (reduces, has a root, sizes in nranks blocks) comes from the generated table
# (tools/nccl_surface.py's COLLECTIVES); sendrecv is the bench's own ring of send/recv pairs.
COLLECTIVES = ("allreduce", "reduce", "broadcast", "allgather", "reduce_scatter", "alltoall", "gather", "scatter",
               "sendrecv")
REDUCING = {name for name, kind in _KINDS.items() if kind.reduces}
ROOTED = {name for name, kind in _KINDS.items() if kind.rooted}
BLOCKED = {name for name, kind in _KINDS.items() if kind.blocked}  # size = nranks blocks

# bench name -> numpy dtype name (ml_dtypes' where the numpy kind is ""), from the datatype table
# (src/ext/buffer/buffer_dtypes.c, written from tools/nccl_surface.py's DTYPES)
DTYPES = {short: numpy_name for _, numpy_name, _, _, short, alias in _ext._numpy_dtypes if not alias}
DTYPE_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "int": "int32", "char": "int8",
                 "bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64"}
OPS = ("sum", "prod", "max", "min", "avg")
ML_DTYPES = {short for _, _, kind, _, short, alias in _ext._numpy_dtypes if not kind and not alias}
FP8 = {short for short in ML_DTYPES if short.startswith("float8")}
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class UsageError(Exception):
    pass


def parse_size(text):
    """'8', '64K', '128M', '1G' (optionally with a trailing B) -> bytes; UsageError otherwise."""
    t = str(text).strip().upper()
    if t.endswith("B"):
        t = t[:-1]
    suffix = t[-1:] if t[-1:] in ("K", "M", "G") else ""
    digits = t[:-1] if suffix else t
    if not digits.isdigit():
        raise UsageError(f"bad size {text!r}: use a whole number of bytes, optionally with K, M or G")
    value = int(digits) * _SUFFIX[suffix]
    if value <= 0:
        raise UsageError(f"bad size {text!r}: sizes must be at least 1 byte")
    return value


def _count(opt, text, minimum):
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise UsageError(f"{opt} must be an integer >= {minimum}, got {text!r}") from None
    if v < minimum:
        raise UsageError(f"{opt} must be an integer >= {minimum}, got {text!r}")
    return v


def _list(opt, text, choices, aliases=None):
    out = []
    for item in str(text).lower().split(","):
        item = (aliases or {}).get(item.strip(), item.strip())
        if item == "all":
            out.extend(c for c in choices if c not in out)
        elif item in choices:
            if item not in out:
                out.append(item)
        else:
            raise UsageError(f"unknown {opt} {item!r} (choose from {', '.join(choices)}, or all)")
    return out


def _have_ml_dtypes():
    # Asked without importing it: the import costs seconds and a plain run never uses it.
    return importlib.util.find_spec("ml_dtypes") is not None


def _have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as UsageError, so that main() prints them as one line."""

    def error(self, message):
        raise UsageError(message)


def _parser():
    paragraphs = __doc__.rstrip().split("\n\n")  # what it does, examples, options, details
    p = _Parser(prog=PROG, description="\n\n".join(paragraphs[:2]), epilog="\n\n".join(paragraphs[3:]),
                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    # The values stay text here; parse_args checks each one and names the option in its message.
    p.add_argument("-c", "--collective", default="allreduce", metavar="LIST",
                   help=f"{', '.join(COLLECTIVES)}; comma-separated, or all (default: allreduce)")
    p.add_argument("-b", "--minbytes", default="8", metavar="SIZE",
                   help="smallest message (default 8); sizes take K, M, G suffixes (powers of 1024)")
    p.add_argument("-e", "--maxbytes", default="32M", metavar="SIZE", help="largest message (default 32M)")
    p.add_argument("-f", "--stepfactor", default="2", metavar="N", help="multiply the size by N each step (default 2)")
    p.add_argument("-d", "--datatype", default=None, metavar="LIST",
                   help=f"{' '.join(DTYPES)} (nccl-tests' names half/float/double/int too), comma-separated, "
                        "or all (default: float32)")
    p.add_argument("-o", "--op", default="sum", metavar="LIST",
                   help=f"{' '.join(OPS)}, comma-separated, or all (default: sum)")
    p.add_argument("-r", "--root", default="0", metavar="N",
                   help="root of reduce, broadcast, gather, scatter (default 0)")
    p.add_argument("-n", "--iters", default="20", metavar="N", help="timed iterations per size (default 20)")
    p.add_argument("-w", "--warmup", default="5", metavar="N", help="untimed iterations first (default 5)")
    p.add_argument("--json", metavar="PATH",
                   help='also write the results as JSON (PATH "-" prints JSON instead of the table)')
    p.add_argument("--plot", metavar="PATH", help="draw bus bandwidth against size into PATH (needs matplotlib)")
    return p


def parse_args(argv):
    """A dict of the settings; UsageError for anything wrong (checked before any library call)."""
    a = _parser().parse_args(argv)
    datatype = "float32" if a.datatype is None else a.datatype
    s = {
        "collectives": _list("collective", a.collective, COLLECTIVES),
        "minbytes": parse_size(a.minbytes),
        "maxbytes": parse_size(a.maxbytes),
        "stepfactor": _count("-f", a.stepfactor, 2),
        "datatypes": _list("datatype", datatype, tuple(DTYPES), DTYPE_ALIASES),
        "ops": _list("op", a.op, OPS),
        "root": _count("-r", a.root, 0),
        "iters": _count("-n", a.iters, 1),
        "warmup": _count("-w", a.warmup, 0),
        "json": a.json,
        "plot": a.plot,
    }
    if s["minbytes"] > s["maxbytes"]:
        raise UsageError(f"-b {a.minbytes} is larger than -e {a.maxbytes}")
    all_datatypes = "all" in datatype.lower()
    if not _have_ml_dtypes():
        need = [d for d in s["datatypes"] if d in ML_DTYPES]
        if need and a.datatype is not None and not all_datatypes:
            raise UsageError(f"datatype {need[0]} needs the ml_dtypes package (pip install ml_dtypes)")
        s["datatypes"] = [d for d in s["datatypes"] if d not in ML_DTYPES]
    explicit_fp8 = [] if all_datatypes else [d for d in s["datatypes"] if d in FP8]
    bad_ops = [] if "all" in a.op.lower() else [o for o in s["ops"] if o in ("prod", "avg")]
    reducing = any(c in REDUCING for c in s["collectives"])
    if explicit_fp8 and bad_ops and reducing:
        raise UsageError(f"unsupported combination: datatype {explicit_fp8[0]} with op {bad_ops[0]} "
                         "(fp8 results of prod and avg cannot be checked exactly; use sum, max or min)")
    if s["plot"] is not None and not _have_matplotlib():
        raise UsageError("--plot needs matplotlib (pip install matplotlib)")
    return s


def combos(s):
    """(collective, dtype, op or None) in table order, skipping what cannot be checked."""
    for coll in s["collectives"]:
        for dt in s["datatypes"]:
            for op in (s["ops"] if coll in REDUCING else [None]):
                if op in ("prod", "avg") and dt in FP8:
                    continue
                yield coll, dt, op


def sizes(s):
    size = s["minbytes"]
    while size <= s["maxbytes"]:
        yield size
        size *= s["stepfactor"]


def bus_factor(coll, n):
    if coll == "allreduce":
        return 2 * (n - 1) / n
    if coll in BLOCKED:
        return (n - 1) / n
    return 1.0


def np_dtype(name):
    np_name = DTYPES[name]
    if name in ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, np_name))
    return np.dtype(np_name)


# ---- inputs and references ----

def make_input(dt, count, rank, op):
    """Rank ``rank``'s input: small integers, so that every reduction is exact in every type."""
    i = np.arange(count, dtype=np.int64)
    if op == "prod":
        v = 1 + (i + rank) % 2
    else:
        v = 1 + (i * 7 + rank * 3) % 5
    return v.astype(np.float64).astype(dt)


def reduce_ref(dt, count, nranks, op):
    acc = None
    for r in range(nranks):
        x = make_input(dt, count, r, op)
        if acc is None:
            acc = x.astype(np.float64)
        elif op in ("sum", "avg"):
            acc = acc + x
        elif op == "prod":
            acc = acc * x
        elif op == "max":
            acc = np.maximum(acc, x)
        else:
            acc = np.minimum(acc, x)
    if op == "avg":
        acc = acc / nranks
        if dt.kind in "iu":
            acc = np.trunc(acc)
    return acc


def _eps(dt):
    try:
        return float(np.finfo(dt).eps)
    except (TypeError, ValueError):
        import ml_dtypes

        return float(ml_dtypes.finfo(dt).eps)


def count_wrong(got, want, dt, nranks, op):
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    if dt.kind in "iu":
        tol = 1.0 if op == "avg" else 0.0
    elif op in ("max", "min", None):
        tol = 0.0
    else:  # sums may round differently in another order; avg pre-scales by a rounded 1/n
        tol = _eps(dt) * nranks * 2
    return int(np.count_nonzero(np.abs(g - w) > tol * np.maximum(1.0, np.abs(w))))


def reference(coll, dt, op, block, total, n, r, root):
    """What rank r's result must hold (None: the collective leaves it nothing to check)."""
    if coll == "allreduce" or (coll == "reduce" and r == root):
        return reduce_ref(dt, block, n, op)
    if coll == "broadcast":
        return make_input(dt, block, root, op)
    if coll == "allgather" or (coll == "gather" and r == root):
        return np.concatenate([make_input(dt, block, j, op) for j in range(n)])
    if coll == "reduce_scatter":
        return reduce_ref(dt, total, n, op)[r * block:(r + 1) * block]
    if coll == "alltoall":
        return np.concatenate([make_input(dt, total, j, op)[r * block:(r + 1) * block] for j in range(n)])
    if coll == "scatter":
        return make_input(dt, total, root, op)[r * block:(r + 1) * block]
    if coll == "sendrecv":
        return make_input(dt, block, (r - 1) % n, op)
    return None  # reduce and gather off the root


def out_of_place(comm, nccl, lib, coll, dt, op, block, total, root):
    """(call, reset, result): call() runs the collective once on separate send and receive
    buffers, reset() restores its input (nothing: the input is not written), result is the
    receive buffer."""
    r, n, stream = comm.rank, comm.nranks, lib.stream
    ncop = getattr(nccl, op.upper()) if op else None
    send = lib.put(make_input(dt, total if coll in ("reduce_scatter", "alltoall", "scatter") else block, r, op))
    recv = lib.zeros(total if coll in ("allgather", "alltoall", "gather") else block, dt)
    calls = {
        "allreduce": lambda: comm.allreduce(send, recv, ncop, stream=stream),
        "reduce": lambda: comm.reduce(send, recv, ncop, root=root, stream=stream),
        "broadcast": lambda: comm.broadcast(send, recv, root=root, stream=stream),
        "allgather": lambda: comm.allgather(send, recv, stream=stream),
        "reduce_scatter": lambda: comm.reduce_scatter(send, recv, ncop, stream=stream),
        "alltoall": lambda: comm.alltoall(send, recv, stream=stream),
        "gather": lambda: comm.gather(send, recv, root=root, stream=stream),
        "scatter": lambda: comm.scatter(send, recv, root=root, stream=stream),
    }

    def sendrecv():  # a ring
        with nccl.group():
            comm.send(send, (r + 1) % n, stream=stream)
            comm.recv(recv, (r - 1) % n, stream=stream)

    return calls.get(coll, sendrecv), lambda: None, recv


def in_place(comm, nccl, lib, coll, dt, op, block, total, root):
    """(call, reset, result) on one buffer, as NCCL defines in-place for each collective (the
    send buffer is the receive buffer, or this rank's block of it); None for alltoall and
    sendrecv, which have no in-place form."""
    if coll in ("alltoall", "sendrecv"):
        return None
    r, stream = comm.rank, lib.stream
    ncop = getattr(nccl, op.upper()) if op else None
    mine = slice(r * block, (r + 1) * block)
    if coll in ("allreduce", "reduce", "broadcast"):
        buf, start = lib.zeros(block, dt), make_input(dt, block, r, op)
        result = buf
    else:
        buf = lib.zeros(total, dt)
        if coll in ("allgather", "gather"):  # this rank's block in place, the rest to be filled
            start = np.zeros(total, dtype=dt)
            start[mine] = make_input(dt, block, r, op)
            result = buf
        else:  # reduce_scatter, scatter: the whole input, this rank's block is the result
            start, result = make_input(dt, total, r, op), buf[mine]
    calls = {
        "allreduce": lambda: comm.allreduce(buf, buf, ncop, stream=stream),
        "reduce": lambda: comm.reduce(buf, buf, ncop, root=root, stream=stream),
        "broadcast": lambda: comm.broadcast(buf, buf, root=root, stream=stream),
        "allgather": lambda: comm.allgather(buf[mine], buf, stream=stream),
        "reduce_scatter": lambda: comm.reduce_scatter(buf, buf[mine], ncop, stream=stream),
        "gather": lambda: comm.gather(buf[mine], buf, root=root, stream=stream),
        "scatter": lambda: comm.scatter(buf, buf[mine], root=root, stream=stream),
    }
    return calls[coll], lambda: lib.fill(buf, start), result


def measure(lib, case, iters, warmup, want, dt, n, op):
    """(mean seconds per call, wrong elements on this rank) of one (call, reset, result); the
    check runs once more from a fresh input, after the timed calls."""
    call, reset, result = case
    reset()
    for _ in range(warmup):
        call()
    lib.sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    lib.sync()
    elapsed = (time.perf_counter() - t0) / iters
    reset()
    call()
    lib.sync()
    return elapsed, 0 if want is None else count_wrong(lib.get(result), want, dt, n, op)


def run_case(comm, nccl, lib, coll, dt, op, size, root, iters, warmup):
    """One row: (count, [out-of-place, in-place] seconds, the same's wrong elements on this rank);
    None when the size holds no element per rank. In-place entries are None where there is none."""
    n, r = comm.nranks, comm.rank
    elems = size // dt.itemsize
    block = elems // n if coll in BLOCKED else elems
    if block == 0:
        return None
    total = block * n if coll in BLOCKED else block
    want = reference(coll, dt, op, block, total, n, r, root)
    times, wrong = [], []
    for make in (out_of_place, in_place):
        case = make(comm, nccl, lib, coll, dt, op, block, total, root)
        t, w = measure(lib, case, iters, warmup, want, dt, n, op) if case is not None else (None, None)
        times.append(t)
        wrong.append(w)
    return total, times, wrong


class HostArrays:
    """NumPy buffers (the host backend)."""

    stream = None

    def put(self, a):
        return np.ascontiguousarray(a)

    def zeros(self, count, dt):
        return np.zeros(count, dtype=dt)

    def get(self, a):
        return a

    def fill(self, buf, a):
        buf[...] = a

    def sync(self):
        pass


class TorchArrays:
    """torch CUDA tensors on the current device (GPU libraries)."""

    def __init__(self):
        import torch

        self.torch = torch
        self._stream = torch.cuda.current_stream()
        self.stream = self._stream.cuda_stream

    def _tdt(self, dt):
        names = {"float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
        return getattr(self.torch, names.get(dt.name, dt.name))

    def put(self, a):
        if a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            t = self.torch.from_numpy(a.astype(np.float32)).to(self._tdt(a.dtype))
        else:
            t = self.torch.from_numpy(np.ascontiguousarray(a))
        return t.cuda()

    def zeros(self, count, dt):
        return self.torch.zeros(count, dtype=self._tdt(dt), device="cuda")

    def get(self, t):
        if t.dtype in (self.torch.bfloat16,) or "float8" in str(t.dtype):
            return t.float().cpu().numpy()
        return t.cpu().numpy()

    def fill(self, buf, a):
        buf.copy_(self.put(a))

    def sync(self):
        self._stream.synchronize()


class CupyArrays:
    def __init__(self):
        import cupy

        self.cupy = cupy
        self._stream = cupy.cuda.get_current_stream()
        self.stream = self._stream.ptr

    def put(self, a):
        return self.cupy.asarray(a)

    def zeros(self, count, dt):
        return self.cupy.zeros(count, dtype=dt)

    def get(self, a):
        return self.cupy.asnumpy(a)

    def fill(self, buf, a):
        buf[...] = self.cupy.asarray(a)

    def sync(self):
        self._stream.synchronize()


def _arrays(flavour):
    if flavour == "host":
        return HostArrays()
    try:
        import torch

        if torch.cuda.is_available():
            return TorchArrays()
    except ImportError:
        pass
    return CupyArrays()


def _select_device(flavour):
    if flavour == "host":
        return
    from nccl.core._env import local_rank

    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank() % torch.cuda.device_count())
            return
    except ImportError:
        pass
    import cupy

    cupy.cuda.Device(local_rank() % cupy.cuda.runtime.getDeviceCount()).use()


# The table's columns as nccl-tests prints them: (name, unit, width), the shared ones, then one
# group for out-of-place and one for in-place.
COLUMNS = (("size", "(B)", 12), ("count", "(elements)", 12), ("type", "", 8), ("redop", "", 6), ("root", "", 6))
GROUP = (("time", "(us)", 7), ("algbw", "(GB/s)", 6), ("busbw", "(GB/s)", 6), ("#wrong", "", 6))
GROUPS = ("out-of-place", "in-place")
GROUP_KEYS = ("time_us", "algbw", "busbw", "wrong")


def header():
    """The three header lines of a collective's table."""
    shared = sum(w for _, _, w in COLUMNS) + 2 * (len(COLUMNS) - 1)
    group = sum(w for _, _, w in GROUP) + 2 * len(GROUP)
    titles = " " * shared + "".join(g.center(group) for g in GROUPS)
    lines = []
    for i in (0, 1):
        cells = [f"{c[i]:>{w}}" for *c, w in COLUMNS] + [f"{c[i]:>{w}}" for *c, w in GROUP] * len(GROUPS)
        lines.append("  ".join(cells))
    return ["#" + line[1:].rstrip() for line in (titles, *lines)]


def _time_text(us):
    return f"{us:.2f}" if us < 1e4 else f"{us:.1f}" if us < 1e5 else f"{us:.0f}"


def fmt_row(row):
    cells = [f"{row[k]:>{w}}" for k, (_, _, w) in zip(("size", "count", "type", "redop", "root"), COLUMNS)]
    for part in (row, row["in_place"]):
        if part is None:
            cells += [f"{'N/A':>{w}}" for _, _, w in GROUP]
            continue
        values = (_time_text(part["time_us"]), f"{part['algbw']:.2f}", f"{part['busbw']:.2f}", part["wrong"])
        cells += [f"{v:>{w}}" for v, (_, _, w) in zip(values, GROUP)]
    return "  ".join(cells)


def library_label():
    """What was measured, for the table's first line and the plot's title: "NCCL 2.28.3
    (libnccl.so.2)", "RCCL 2.27.7 (librccl.so)", "host backend 2.32.3 (libnccl-host.so)"."""
    import nccl

    lib = nccl.get_version().nccl
    name = {"nccl": "NCCL", "rccl": "RCCL", "host": "host backend"}.get(lib.flavour, str(lib.flavour))
    return f"{name} {lib.version} ({lib.path.name if lib.path is not None else 'no path'})"


def plot(rows, path, nranks, library):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    series = {}
    for row in rows:
        label = " ".join(x for x in (row["collective"], row["type"], row["redop"] if row["redop"] != "none" else "")
                         if x)
        series.setdefault(label, []).append((row["size"], row["busbw"]))
    for label, pts in series.items():
        xs, ys = zip(*pts)
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("bus bandwidth, out-of-place (GB/s)")
    ax.set_title(f"nccl.bench: {library}, {nranks} rank(s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _table_stream():
    """Where rank 0's table goes: under python -m nccl.run its plain channel, which the launcher
    copies without the rank prefix (docs/api/launcher.md#output); else stdout."""
    from nccl._launch import PLAIN_FD_VARIABLE

    fd = os.environ.get(PLAIN_FD_VARIABLE, "")
    if fd.isdigit():
        try:
            return open(int(fd), "w", buffering=1, closefd=False)
        except OSError:
            pass
    return sys.stdout


def _communicator(nccl):
    """The launcher's communicator; without a launcher a 1-rank one, with a warning."""
    from nccl.core._env import detect

    try:
        alone = detect().kind == "single"
    except ValueError:
        alone = False  # from_env says what is wrong with the variables
    if not alone:
        return nccl.Communicator.from_env()
    print(f"{PROG}: warning: no launcher found, so this is 1 rank: nothing crosses a process and busbw is 0. "
          f"Start N ranks with python -m nccl.run -n N -m {PROG}, mpirun -n N python -m {PROG}, or "
          f"torchrun --nproc-per-node N -m {PROG}", file=sys.stderr, flush=True)
    return nccl.Communicator.init(nranks=1, rank=0, unique_id=nccl.get_unique_id())


def _row(comm, nccl, lib, s, coll, dt, dt_name, op, size):
    """One row of the table, with every rank's results combined (the slowest rank's times, the
    wrong elements of all); None when the size holds no element per rank."""
    res = run_case(comm, nccl, lib, coll, dt, op, size, s["root"], s["iters"], s["warmup"])
    if res is None:
        return None
    count, times, wrong = res
    f64 = np.dtype(np.float64)
    t_mine = lib.put(np.array([t if t is not None else 0.0 for t in times]))
    w_mine = lib.put(np.array([float(w) if w is not None else 0.0 for w in wrong]))
    t_all, w_all = lib.zeros(2, f64), lib.zeros(2, f64)
    comm.allreduce(t_mine, t_all, nccl.MAX, stream=lib.stream)
    comm.allreduce(w_mine, w_all, nccl.SUM, stream=lib.stream)
    lib.sync()
    t_all, w_all = lib.get(t_all), lib.get(w_all)
    nbytes, n = count * dt.itemsize, comm.nranks
    parts = []
    for i in (0, 1):
        if times[i] is None:
            parts.append(None)
            continue
        algbw = nbytes / t_all[i] / 1e9 if t_all[i] > 0 else 0.0
        parts.append({"time_us": float(t_all[i]) * 1e6, "algbw": algbw, "busbw": algbw * bus_factor(coll, n),
                      "wrong": int(w_all[i])})
    return {"collective": coll, "size": nbytes, "count": count, "type": dt_name, "redop": op or "none",
            "root": s["root"] if coll in ROOTED else -1, **parts[0], "in_place": parts[1]}


def run(s):
    import nccl.core as nccl
    from nccl import __version__
    from nccl.bindings import nccl as bindings

    flavour = bindings.get_library_flavour()
    _select_device(flavour)
    comm = _communicator(nccl)
    try:
        n, rank = comm.nranks, comm.rank
        if s["root"] >= n and any(c in ROOTED for c in s["collectives"]):
            if rank == 0:
                print(f"{PROG}: error: -r {s['root']} is not a rank of {n}", file=sys.stderr)
            return EXIT_USAGE
        lib = _arrays(flavour)
        out = _table_stream() if rank == 0 else None
        say = (lambda line: print(line, file=out, flush=True)) if out is not None and s["json"] != "-" else \
            (lambda line: None)
        library = library_label()
        say(f"# {PROG} (nccl4py {__version__}): {library}, {n} rank(s)")
        say(f"# minBytes {s['minbytes']} maxBytes {s['maxbytes']} step: {s['stepfactor']}(factor) "
            f"warmup iters: {s['warmup']} iters: {s['iters']} root: {s['root']} validation: 1")
        rows, last = [], None
        for coll, dt_name, op in combos(s):
            if coll != last:
                say(f"#\n# {coll}")
                for line in header():
                    say(line)
                last = coll
            for size in sizes(s):
                row = _row(comm, nccl, lib, s, coll, np_dtype(dt_name), dt_name, op, size)
                if row is not None:
                    rows.append(row)
                    say(fmt_row(row))
        parts = [p for r in rows for p in (r, r["in_place"]) if p is not None]
        total_wrong = sum(p["wrong"] for p in parts)
        avg = sum(p["busbw"] for p in parts) / len(parts) if parts else 0.0
        say(f"# Out of bounds values : {total_wrong} {'OK' if total_wrong == 0 else 'FAILED'}")
        say(f"# Avg bus bandwidth    : {avg:g}")
        say("#")
        if rank == 0:
            doc = {"nccl4py": __version__, "library": bindings.get_library_path(), "flavour": flavour,
                   "measured": library, "nranks": n, "iters": s["iters"], "warmup": s["warmup"], "results": rows,
                   "wrong": total_wrong, "avg_busbw": avg}
            if s["json"] == "-":
                print(json.dumps(doc, indent=1), file=out, flush=True)
            elif s["json"]:
                with open(s["json"], "w") as f:
                    json.dump(doc, f, indent=1)
            if s["plot"]:
                plot(rows, s["plot"], n, library)
        return 0 if total_wrong == 0 else 1
    finally:
        comm.destroy()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        s = parse_args(argv)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return run(s)


if __name__ == "__main__":
    sys.exit(main())
