"""Per-call cost of nccl4py against a null library, side by side in one run:

* nccl.bindings.nccl.all_reduce (seven ints) against two floors, bare METH_FASTCALL C functions
  converting the same seven ints: one that does nothing else, and one that also makes the empty
  library call with the GIL released around it, as every binding does (like for like); and a
  ctypes binding of the same symbol;
* the same all_reduce given a Comm object (nccl4py 0.5+) instead of the int communicator;
* the flight recorder: comm.allreduce(x, x, SUM) on a communicator made by Communicator.init with
  recording on (trace_buffer=2000) and off (trace_buffer=0), side by side (docs/api/trace.md#cost);
* nccl.core's comm.allreduce(x, x, SUM) on a numpy array and (when torch is installed) a torch
  CPU tensor of 1024 float32, which resolves both buffers, the op and the stream per call, against
  the low-level call; and the same call with config=None and with config=NCCLCollConfig(min_ctas=1)
  (nccl4py 0.6.0's per-call config, through ncclAllReduceConfig). The null library claims the host
  flavour, so host memory is accepted.

Prints a table and, with --json, the raw figures.

    python benchmarks/overhead.py [--repeat 7] [--number 200000] [--json out.json]

The library is opened with NCCL_LIBRARY, so nothing else on the machine is involved. Not a test:
timings on a shared machine are noise-prone, which is why the figures are reported as ratios of
runs interleaved in the same process, with the median of several repeats.
"""

import argparse
import ctypes
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(tmp):
    cc = os.environ.get("CC", "gcc")
    null = Path(tmp) / "libnull_nccl.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(null), str(HERE / "null_nccl.c")], check=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    floor = Path(tmp) / f"floor_ext{suffix}"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", f"-I{sysconfig.get_paths()['include']}", "-o", str(floor),
                    str(HERE / "floor_ext.c")], check=True)
    spec = importlib.util.spec_from_file_location("floor_ext", floor)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return null, mod


def core_cases(comm_ptr):
    """comm.allreduce(x, x, SUM) through nccl.core on numpy and, if installed, torch."""
    import numpy as np

    import nccl.core as nc

    comm = nc.Communicator(comm_ptr)  # wraps the fake handle; never destroyed (the library is null)
    x = np.zeros(1024, np.float32)
    cfg = nc.NCCLCollConfig(min_ctas=1) if hasattr(nc, "NCCLCollConfig") else None
    cases = {"nccl.core allreduce (numpy)": lambda: comm.allreduce(x, x, nc.SUM)}
    # The flight recorder (docs/api/trace.md): two communicators made by init, one recording (the
    # default ring of 2000 entries, wrapped many times over by the run) and one not.
    if "trace_buffer" in (nc.Communicator.init.__doc__ or ""):
        uid = nc.get_unique_id()
        rec_on = nc.Communicator.init(1, 0, uid, trace_buffer=2000)
        rec_off = nc.Communicator.init(1, 0, uid, trace_buffer=0)
        cases["allreduce, recording off"] = lambda: rec_off.allreduce(x, x, nc.SUM)
        cases["allreduce, recording on"] = lambda: rec_on.allreduce(x, x, nc.SUM)
    if hasattr(nc, "NCCLCollConfig"):
        cases["nccl.core allreduce stream=None"] = lambda: comm.allreduce(x, x, nc.SUM, stream=None)
        cases["nccl.core allreduce config=None"] = lambda: comm.allreduce(x, x, nc.SUM, config=None)
        cases["nccl.core allreduce config=cfg"] = lambda: comm.allreduce(x, x, nc.SUM, config=cfg)
    try:
        import torch
    except ImportError:
        return cases
    t = torch.zeros(1024, dtype=torch.float32)
    cases["nccl.core allreduce (torch)"] = lambda: comm.allreduce(t, t, nc.SUM)
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=200_000)
    ap.add_argument("--json", help="write the raw figures to this file")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        null, floor = build(tmp)
        os.environ["NCCL_LIBRARY"] = str(null)
        import nccl.bindings.nccl as n

        assert n.get_library_path() == str(null)

        lib = ctypes.CDLL(str(null))
        c_all_reduce = lib.ncclAllReduce
        c_all_reduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_void_p]
        c_all_reduce.restype = ctypes.c_int

        floor.set_target(ctypes.cast(c_all_reduce, ctypes.c_void_p).value)

        buf = 0x7F0000001000  # a pointer-sized int, as upstream's callers pass
        comm, stream = 0x55550000, 0
        comm_obj = n.Comm(comm)  # what nccl4py 0.5+ creation calls return
        cases = {
            "floor (bare FASTCALL, 7 ints)": lambda: floor.seven_ints(buf, buf, 1024, 7, 0, comm, stream),
            "floor + GIL-released empty call": lambda: floor.seven_ints_nogil(buf, buf, 1024, 7, 0, comm, stream),
            "nccl.bindings.nccl.all_reduce": lambda: n.all_reduce(buf, buf, 1024, 7, 0, comm, stream),
            "all_reduce with a Comm": lambda: n.all_reduce(buf, buf, 1024, 7, 0, comm_obj, stream),
            "ctypes ncclAllReduce": lambda: c_all_reduce(buf, buf, 1024, 7, 0, comm, stream),
        }
        cases.update(core_cases(comm))
        # Interleave the cases in every repeat so drifts in machine load hit all of them alike.
        samples = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, fn in cases.items():
                samples[name].append(min(timeit.repeat(fn, number=args.number // 10, repeat=3)) / (args.number // 10))
        # The lambda adds the same frame to every case; measure it and take it out.
        empty = min(timeit.repeat(lambda: None, number=args.number // 10, repeat=5)) / (args.number // 10)
        med = {name: max(statistics.median(v) - empty, 1e-12) for name, v in samples.items()}

    floor_ns = med["floor (bare FASTCALL, 7 ints)"] * 1e9
    nogil_ns = med["floor + GIL-released empty call"] * 1e9
    ours_ns = med["nccl.bindings.nccl.all_reduce"] * 1e9
    handle_ns = med["all_reduce with a Comm"] * 1e9
    ctypes_ns = med["ctypes ncclAllReduce"] * 1e9
    print(f"{'case':36} {'ns/call':>9} {'vs floor':>9}")
    for name, sec in med.items():
        print(f"{name:36} {sec * 1e9:9.1f} {sec * 1e9 / floor_ns:8.2f}x")
    print(f"\nall_reduce / floor = {ours_ns / floor_ns:.2f}   (target <= 1.3)")
    print(f"all_reduce / GIL-released floor = {ours_ns / nogil_ns:.2f}   (like for like)")
    print(f"all_reduce(Comm) / all_reduce(int) = {handle_ns / ours_ns:.2f}   (target <= 1.1)")
    print(f"ctypes / all_reduce = {ctypes_ns / ours_ns:.2f}  (target >= 6)")
    plain = med.get("nccl.core allreduce (numpy)")
    # A keyword argument has a fixed cost in the interpreter (no specialised call); stream=None,
    # which predates config=, shows it.
    for name in ("nccl.core allreduce stream=None", "nccl.core allreduce config=None", "nccl.core allreduce config=cfg"):
        if name in med:
            print(f"{name} / plain numpy call = {med[name] / plain:.3f}")
    if "allreduce, recording on" in med:
        print(f"allreduce recording on / off = "
              f"{med['allreduce, recording on'] / med['allreduce, recording off']:.3f}   (target <= 1.15)")
    for kind, target in (("numpy", 1000), ("torch", 2000)):
        ns = med.get(f"nccl.core allreduce ({kind})")
        if ns is not None:
            ns *= 1e9
            print(f"nccl.core allreduce ({kind}) = {ns:.0f} ns, {ns / ours_ns:.2f}x the low-level call "
                  f"(target <= {target} ns)")
    if args.json:
        Path(args.json).write_text(json.dumps({"ns_per_call": {k: v * 1e9 for k, v in med.items()},
                                               "python": sys.version, "empty_lambda_ns": empty * 1e9}, indent=2))


if __name__ == "__main__":
    main()
