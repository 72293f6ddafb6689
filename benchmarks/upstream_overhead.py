"""Per-call cost of nccl4py against NVIDIA's nccl4py 0.6.0, side by side in one run, both on the
same null library (benchmarks/null_nccl.c, whose entry points return at once):

* nccl.core's ``comm.allreduce(x, x, SUM)``, plain and with ``config=NCCLCollConfig(min_ctas=1)``;
* nccl.bindings.nccl's ``all_reduce`` with a ``Comm`` handle (0.6.0's form).

Upstream runs in its own virtualenv, which this script does not create:

    python -m venv /tmp/up && /tmp/up/bin/pip install nccl4py==0.6.0 'cuda-bindings~=12.0'
    python benchmarks/upstream_overhead.py --upstream-venv /tmp/up [--repeat 7] [--number 20000]

Upstream finds the library as ``libnccl.so.2`` on LD_LIBRARY_PATH and its cuda-bindings need a
driver: the script builds both, the null library under that name and benchmarks/stub_libcuda.c as
``libcuda.so.1`` (every pointer reported as memory of device 0), in one temporary directory.
Upstream accepts only device buffers, so its buffer is an object whose ``__cuda_array_interface__``
points at host memory; ours gets a numpy array of the same 1024 float32 (the null library claims
the host flavour, where ours takes host memory and refuses device buffers).

Each side runs in its own process, kept alive; the parent asks them in turn for one measurement
per repeat (interleaved, so drifts in machine load hit both alike) and prints medians and the
ratio upstream / ours. Not a test: on a shared machine the absolute figures are noisy, the ratios
of interleaved runs less so.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV_HINT = "python -m venv /tmp/up && /tmp/up/bin/pip install nccl4py==0.6.0 'cuda-bindings~=12.0'"
COMM = 0x55550000  # a fake communicator: the null library never looks at it


class HostCAI:
    """A host array exposing ``__cuda_array_interface__`` (the stub driver calls it device memory)."""

    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                                         "strides": None, "version": 3}


def child_cases(side):
    import numpy as np

    import nccl.bindings.nccl as n
    import nccl.core as nc

    x = np.zeros(1024, np.float32)
    cai = HostCAI(x)
    comm = nc.Communicator(COMM)  # never destroyed: the library is null
    cfg = nc.NCCLCollConfig(min_ctas=1)
    handle = n.Comm(COMM)
    ptr = x.ctypes.data
    # Each side on the buffer it accepts here: ours treats a __cuda_array_interface__ as device
    # memory, which the host-flavoured null library refuses; upstream takes nothing else.
    buf = x if side == "ours" else cai
    cases = {
        "core allreduce": lambda: comm.allreduce(buf, buf, nc.SUM),
        "core allreduce config=cfg": lambda: comm.allreduce(buf, buf, nc.SUM, config=cfg),
    }
    cases["bindings all_reduce(Comm)"] = lambda: n.all_reduce(ptr, ptr, 1024, 7, 0, handle, 0)
    return cases


def child(side, number):
    """Serves measurements: one line in (anything), one JSON line out {case: seconds per call}."""
    cases = child_cases(side)
    for fn in cases.values():  # first calls resolve the device, load lazies, etc.
        fn()
    empty = min(timeit.repeat(lambda: None, number=number, repeat=3)) / number
    for _ in sys.stdin:
        out = {name: min(timeit.repeat(fn, number=number, repeat=3)) / number - empty for name, fn in cases.items()}
        print(json.dumps(out), flush=True)


def build(tmp):
    cc = os.environ.get("CC", "gcc")
    lib = Path(tmp)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wl,-soname,libnccl.so.2", "-o", str(lib / "libnccl.so.2"),
                    str(HERE / "null_nccl.c")], check=True)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wl,-soname,libcuda.so.1", "-o", str(lib / "libcuda.so.1"),
                    str(HERE / "stub_libcuda.c"), "-ldl"], check=True)
    return lib


def start(python, side, lib, number):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = f"{lib}:{env['LD_LIBRARY_PATH']}" if env.get("LD_LIBRARY_PATH") else str(lib)
    env["NCCL_LIBRARY"] = str(lib / "libnccl.so.2")  # ours; upstream ignores it
    env.pop("PYTHONPATH", None)
    return subprocess.Popen([python, str(Path(__file__).resolve()), "--child", side, "--number", str(number)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())


def ask(proc):
    proc.stdin.write("go\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"the benchmark process exited with {proc.wait()}")
    return json.loads(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream-venv", help="a virtualenv with nccl4py==0.6.0 and cuda-bindings~=12.0: " + VENV_HINT)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=20_000)
    ap.add_argument("--json", help="write the medians (ns per call) to this file")
    ap.add_argument("--child", choices=("ours", "upstream"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.number)
    if not args.upstream_venv:
        raise SystemExit(f"--upstream-venv is required; create one with:\n    {VENV_HINT}")
    upstream_python = Path(args.upstream_venv) / "bin" / "python"
    if not upstream_python.exists():
        raise SystemExit(f"{upstream_python} not found; create the virtualenv with:\n    {VENV_HINT}")

    with tempfile.TemporaryDirectory() as tmp:
        lib = build(tmp)
        procs = {"ours": start(sys.executable, "ours", lib, args.number),
                 "upstream": start(str(upstream_python), "upstream", lib, args.number)}
        try:
            samples = {}
            for _ in range(args.repeat):
                for side, proc in procs.items():
                    for name, sec in ask(proc).items():
                        samples.setdefault((side, name), []).append(sec)
        finally:
            for proc in procs.values():
                proc.stdin.close()
                proc.wait()
    med = {key: statistics.median(v) * 1e9 for key, v in samples.items()}

    print(f"{'case':36} {'ours ns':>9} {'upstream ns':>12} {'upstream/ours':>14}")
    for (side, name), ns in med.items():
        if side != "ours":
            continue
        up = med.get(("upstream", name))
        print(f"{name:36} {ns:9.0f} {up if up is None else f'{up:12.0f}':>12} "
              f"{'' if up is None else f'{up / ns:13.1f}x':>14}")
    for name in ("core allreduce", "core allreduce config=cfg", "bindings all_reduce(Comm)"):
        target = "   (target >= 10)" if name.startswith("core") else ""
        print(f"upstream / ours, {name}: {med[('upstream', name)] / med[('ours', name)]:.1f}x{target}")
    if args.json:
        Path(args.json).write_text(json.dumps({f"{s}: {n}": v for (s, n), v in med.items()}, indent=2))


if __name__ == "__main__":
    main()
