"""Per-call cost of nccl4py on a free-threaded CPython with the GIL off against the same
interpreter with the GIL on (PYTHON_GIL=1), side by side in one run.

The GIL state is fixed per process, so each repeat starts one child with PYTHON_GIL=0 and one
with PYTHON_GIL=1, alternately, and each child times every case once (the cases of overhead.py:
the bare FASTCALL floor, nccl.bindings.nccl.all_reduce, and nccl.core's comm.allreduce on numpy
and, when installed, torch; all against a null library). The figure is the median over repeats
of each mode, and the ratio GIL off / GIL on per case (target: at most 1.10 for nccl.core).

    python3.13t benchmarks/gil_overhead.py [--repeat 7] [--number 200000] [--json out.json]

Not a test: timings on a shared machine are noise-prone, hence ratios of interleaved runs.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import timeit
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = 1.10


def overhead_module():
    spec = importlib.util.spec_from_file_location("overhead", HERE / "overhead.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def child(floor_path, number):
    """Times each case once in this process; prints {case: seconds per call} and the GIL state."""
    spec = importlib.util.spec_from_file_location("floor_ext", floor_path)
    floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(floor)
    import nccl.bindings.nccl as n

    buf, comm, stream = 0x7F0000001000, 0x55550000, 0
    cases = {
        "floor (bare FASTCALL, 7 ints)": lambda: floor.seven_ints(buf, buf, 1024, 7, 0, comm, stream),
        "nccl.bindings.nccl.all_reduce": lambda: n.all_reduce(buf, buf, 1024, 7, 0, comm, stream),
    }
    cases.update(overhead_module().core_cases(comm))
    n_each = max(1, number // 10)
    empty = min(timeit.repeat(lambda: None, number=n_each, repeat=5)) / n_each
    out = {name: max(min(timeit.repeat(fn, number=n_each, repeat=3)) / n_each - empty, 1e-12)
           for name, fn in cases.items()}
    print(json.dumps({"gil": sys._is_gil_enabled(), "seconds": out}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=200_000)
    ap.add_argument("--json", help="write the raw figures to this file")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # the floor extension's path
    args = ap.parse_args()
    if args.child:
        child(args.child, args.number)
        return
    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        sys.exit("gil_overhead.py needs a free-threaded CPython (python3.13t or later)")

    samples = {"0": {}, "1": {}}
    with tempfile.TemporaryDirectory() as tmp:
        with warnings.catch_warnings():  # building imports the floor here, which turns this process's GIL on
            warnings.simplefilter("ignore", RuntimeWarning)
            null, floor = overhead_module().build(tmp)
        for _ in range(args.repeat):
            for mode in ("0", "1"):
                env = dict(os.environ, NCCL_LIBRARY=str(null), PYTHON_GIL=mode)
                proc = subprocess.run([sys.executable, __file__, "--child", floor.__file__, "--number",
                                       str(args.number)], env=env, capture_output=True, text=True, check=True)
                got = json.loads(proc.stdout.strip().splitlines()[-1])
                if got["gil"] != (mode == "1"):
                    sys.exit(f"PYTHON_GIL={mode} but the child reports the GIL {'on' if got['gil'] else 'off'}")
                for name, sec in got["seconds"].items():
                    samples[mode].setdefault(name, []).append(sec)

    med = {mode: {name: statistics.median(v) for name, v in cases.items()} for mode, cases in samples.items()}
    print(f"{sys.version.split()[0]} free-threaded, median of {args.repeat} interleaved runs per mode")
    print(f"{'case':36} {'GIL off ns':>10} {'GIL on ns':>10} {'off/on':>7}")
    worst = 0.0
    for name in med["0"]:
        off, on = med["0"][name] * 1e9, med["1"][name] * 1e9
        if name.startswith("nccl.core"):
            worst = max(worst, off / on)
        print(f"{name:36} {off:10.1f} {on:10.1f} {off / on:7.2f}")
    print(f"\nnccl.core GIL off / GIL on = {worst:.2f}   (target <= {TARGET:.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps({"ns_per_call": {m: {k: v * 1e9 for k, v in c.items()}
                                                               for m, c in med.items()},
                                               "python": sys.version}, indent=2))


if __name__ == "__main__":
    main()
