"""python -m nccl.bench: bandwidth of every collective, nccl-tests style, with a check per size.

    python -m nccl.run -n 2 -m nccl.bench -b 8 -e 128M -f 2 -d float32 -o sum -n 20 -w 5
    mpirun -n 2 python -m nccl.bench -c all --json results.json --plot busbw.png

Options (python -m nccl.bench --help lists them): -c collectives, -b/-e smallest and largest size,
-f step factor, -d datatypes, -o reduction ops, -r root, -n iterations, -w warmup iterations,
--json PATH, --plot PATH.

"size" is the bytes of the whole operation as nccl-tests counts them: the buffer of allreduce,
reduce, broadcast and sendrecv; the gathered (or scattered, or exchanged) total of the others, so
each rank's block is size / nranks. time is the slowest rank's mean per iteration. busbw scales
algbw (size / time) by the collective's factor (allreduce 2(n-1)/n; allgather, reduce_scatter,
alltoall, gather, scatter (n-1)/n; others 1). #wrong counts, over all ranks, the elements that
differ from a reference computed on every rank from every rank's inputs.

Bad sizes, unknown names and combinations the bench cannot check (fp8 with prod or avg; bfloat16
and fp8 without ml_dtypes) are a one-line error with exit status 2. Exit status 1 when any
#wrong is not 0.
"""

import argparse
import importlib.util
import json
import sys
import time

import numpy as np

__all__ = ["main", "parse_args", "parse_size", "COLLECTIVES"]

PROG = "nccl.bench"
EXIT_USAGE = 2

COLLECTIVES = ("allreduce", "reduce", "broadcast", "allgather", "reduce_scatter", "alltoall", "gather", "scatter",
               "sendrecv")
REDUCING = {"allreduce", "reduce", "reduce_scatter"}
ROOTED = {"reduce", "broadcast", "gather", "scatter"}
BLOCKED = {"allgather", "reduce_scatter", "alltoall", "gather", "scatter"}  # size = nranks blocks

# bench name -> (numpy dtype name or ml_dtypes name, nccl.core constant name)
DTYPES = {
    "int8": ("int8", "INT8"), "uint8": ("uint8", "UINT8"), "int32": ("int32", "INT32"),
    "uint32": ("uint32", "UINT32"), "int64": ("int64", "INT64"), "uint64": ("uint64", "UINT64"),
    "float16": ("float16", "FLOAT16"), "float32": ("float32", "FLOAT32"), "float64": ("float64", "FLOAT64"),
    "bfloat16": ("bfloat16", "BFLOAT16"), "float8e4m3": ("float8_e4m3fn", "FLOAT8E4M3"),
    "float8e5m2": ("float8_e5m2", "FLOAT8E5M2"),
}
DTYPE_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "int": "int32", "char": "int8",
                 "bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64"}
OPS = ("sum", "prod", "max", "min", "avg")
ML_DTYPES = {"bfloat16", "float8e4m3", "float8e5m2"}
FP8 = {"float8e4m3", "float8e5m2"}
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
    np_name = DTYPES[name][0]
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


def run_case(comm, nccl, lib, coll, dt, op, size, root, iters, warmup):
    """One row: (count, time_us or None when skipped, wrong on this rank)."""
    n, r = comm.nranks, comm.rank
    elems = size // dt.itemsize
    block = elems // n if coll in BLOCKED else elems
    if block == 0:
        return None
    total = block * n if coll in BLOCKED else block
    ncop = getattr(nccl, op.upper()) if op else None
    stream = lib.stream

    if coll == "allreduce":
        send, recv = lib.put(make_input(dt, block, r, op)), lib.zeros(block, dt)
        call = lambda: comm.allreduce(send, recv, ncop, stream=stream)  # noqa: E731
    elif coll == "reduce":
        send, recv = lib.put(make_input(dt, block, r, op)), lib.zeros(block, dt)
        call = lambda: comm.reduce(send, recv, ncop, root=root, stream=stream)  # noqa: E731
    elif coll == "broadcast":
        send, recv = lib.put(make_input(dt, block, r, op)), lib.zeros(block, dt)
        call = lambda: comm.broadcast(send, recv, root=root, stream=stream)  # noqa: E731
    elif coll == "allgather":
        send, recv = lib.put(make_input(dt, block, r, op)), lib.zeros(total, dt)
        call = lambda: comm.allgather(send, recv, stream=stream)  # noqa: E731
    elif coll == "reduce_scatter":
        send, recv = lib.put(make_input(dt, total, r, op)), lib.zeros(block, dt)
        call = lambda: comm.reduce_scatter(send, recv, ncop, stream=stream)  # noqa: E731
    elif coll == "alltoall":
        send, recv = lib.put(make_input(dt, total, r, op)), lib.zeros(total, dt)
        call = lambda: comm.alltoall(send, recv, stream=stream)  # noqa: E731
    elif coll == "gather":
        send, recv = lib.put(make_input(dt, block, r, op)), lib.zeros(total, dt)
        call = lambda: comm.gather(send, recv, root=root, stream=stream)  # noqa: E731
    elif coll == "scatter":
        send, recv = lib.put(make_input(dt, total, r, op)), lib.zeros(block, dt)
        call = lambda: comm.scatter(send, recv, root=root, stream=stream)  # noqa: E731
    else:  # sendrecv: a ring
        send, recv = lib.put(make_input(dt, block, r, op)), lib.zeros(block, dt)
        right, left = (r + 1) % n, (r - 1) % n

        def call():
            with nccl.group():
                comm.send(send, right, stream=stream)
                comm.recv(recv, left, stream=stream)

    for _ in range(warmup):
        call()
    lib.sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    lib.sync()
    elapsed = (time.perf_counter() - t0) / iters

    got = lib.get(recv)
    if coll == "allreduce" or (coll == "reduce" and r == root):
        want = reduce_ref(dt, block, n, op)
    elif coll == "reduce":
        want = None
    elif coll == "broadcast":
        want = make_input(dt, block, root, op)
    elif coll == "allgather" or (coll == "gather" and r == root):
        want = np.concatenate([make_input(dt, block, j, op) for j in range(n)])
    elif coll == "gather":
        want = None
    elif coll == "reduce_scatter":
        want = reduce_ref(dt, total, n, op)[r * block:(r + 1) * block]
    elif coll == "alltoall":
        want = np.concatenate([make_input(dt, total, j, op)[r * block:(r + 1) * block] for j in range(n)])
    elif coll == "scatter":
        want = make_input(dt, total, root, op)[r * block:(r + 1) * block]
    else:
        want = make_input(dt, block, (r - 1) % n, op)
    wrong = 0 if want is None else count_wrong(got, want, dt, n, op)
    return total, elapsed, wrong


class HostArrays:
    """NumPy buffers (the host backend)."""

    stream = None

    def put(self, a):
        return np.ascontiguousarray(a)

    def zeros(self, count, dt):
        return np.zeros(count, dtype=dt)

    def get(self, a):
        return a

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


def _fmt_row(row):
    return (f"{row['size']:>12} {row['count']:>12} {row['type']:>10} {row['redop']:>6} {row['root']:>5} "
            f"{row['time_us']:>10.2f} {row['algbw']:>7.2f} {row['busbw']:>7.2f} {row['wrong']:>6}")


HEADER = ("#        size        count       type  redop  root   time(us)   algbw   busbw #wrong\n"
          "#         (B)   (elements)                                      (GB/s)  (GB/s)")


def plot(rows, path, nranks):
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
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"nccl4py bench, {nranks} ranks")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(s):
    import nccl.core as nccl
    from nccl import __version__
    from nccl.bindings import nccl as bindings

    flavour = bindings.get_library_flavour()
    _select_device(flavour)
    comm = nccl.Communicator.from_env()
    try:
        n, rank = comm.nranks, comm.rank
        if s["root"] >= n and any(c in ROOTED for c in s["collectives"]):
            if rank == 0:
                print(f"{PROG}: error: -r {s['root']} is not a rank of {n}", file=sys.stderr)
            return EXIT_USAGE
        lib = _arrays(flavour)
        to_stdout = s["json"] != "-"
        say = (lambda *a: print(*a, flush=True)) if rank == 0 and to_stdout else (lambda *a: None)
        say(f"# nccl4py {__version__}: {bindings.get_library_path()} ({flavour}), {n} rank(s)")
        say(f"# iters {s['iters']}, warmup {s['warmup']}, root {s['root']}")
        rows = []
        last = None
        for coll, dt_name, op in combos(s):
            if coll != last:
                say(f"#\n# {coll}")
                say(HEADER)
                last = coll
            dt = np_dtype(dt_name)
            for size in sizes(s):
                res = run_case(comm, nccl, lib, coll, dt, op, size, s["root"], s["iters"], s["warmup"])
                if res is None:
                    continue
                count, elapsed, wrong = res
                # the slowest rank's time, and the wrong elements of every rank
                f64 = np.dtype(np.float64)
                t_mine, w_mine = lib.put(np.array([elapsed])), lib.put(np.array([float(wrong)]))
                t_all, w_all = lib.zeros(1, f64), lib.zeros(1, f64)
                comm.allreduce(t_mine, t_all, nccl.MAX, stream=lib.stream)
                comm.allreduce(w_mine, w_all, nccl.SUM, stream=lib.stream)
                lib.sync()
                t = float(lib.get(t_all)[0])
                wrong_all = int(lib.get(w_all)[0])
                bytes_ = count * dt.itemsize
                algbw = bytes_ / t / 1e9 if t > 0 else 0.0
                row = {"collective": coll, "size": bytes_, "count": count, "type": dt_name, "redop": op or "none",
                       "root": s["root"] if coll in ROOTED else -1, "time_us": t * 1e6, "algbw": algbw,
                       "busbw": algbw * bus_factor(coll, n), "wrong": wrong_all}
                rows.append(row)
                say(_fmt_row(row))
        total_wrong = sum(r["wrong"] for r in rows)
        say(f"# Out of bounds values : {total_wrong} {'OK' if total_wrong == 0 else 'FAILED'}")
        if rank == 0:
            doc = {"nccl4py": __version__, "library": bindings.get_library_path(), "flavour": flavour, "nranks": n,
                   "iters": s["iters"], "warmup": s["warmup"], "results": rows, "wrong": total_wrong}
            if s["json"] == "-":
                print(json.dumps(doc, indent=1), flush=True)
            elif s["json"]:
                with open(s["json"], "w") as f:
                    json.dump(doc, f, indent=1)
            if s["plot"]:
                plot(rows, s["plot"], n)
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
