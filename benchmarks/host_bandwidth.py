"""Host-backend allreduce/allgather latency and bus bandwidth at 2 ranks, side by side with MPI's
shared-memory path (mpi4py Allreduce/Allgather on numpy, under mpiexec) and, when torch is
installed, torch.distributed's gloo backend on CPU tensors. Not a test.

    python benchmarks/host_bandwidth.py [--max-bytes 67108864] [--json out.json]

Each backend runs in its own pair of processes; rank 0 reports the median time per call for each
size (float32 elements, 8 B to --max-bytes in x4 steps, then --max-bytes itself). Bus bandwidth follows nccl-tests:
allreduce busbw = bytes/t * 2(n-1)/n, allgather busbw = (n * bytes)/t * (n-1)/n with bytes the
per-rank contribution.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

NRANKS = 2


def sizes(max_bytes):
    s, out = 8, []
    while s < max_bytes:
        out.append(s)
        s *= 4
    return out + [max_bytes]


def iters_for(nbytes):
    return max(5, min(200, (1 << 24) // max(nbytes, 1)))


def timed(fn, nbytes, barrier):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(iters_for(nbytes)):
        barrier()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def worker_nccl4py(rank, uid_hex, max_bytes):
    import nccl.bindings.nccl as b

    box = b.PointerBox()
    b.comm_init_rank(box.address, NRANKS, bytes.fromhex(uid_hex), rank)
    comm = box.ptr
    one = np.zeros(1, dtype=np.float32)

    def barrier():
        b.all_reduce(one.ctypes.data, one.ctypes.data, 1, b.DataType.Float32, b.RedOp.Sum, comm, 0)

    out = {}
    for nbytes in sizes(max_bytes):
        n = nbytes // 4
        x, y, g = np.ones(n, np.float32), np.empty(n, np.float32), np.empty(n * NRANKS, np.float32)
        ar = timed(lambda: b.all_reduce(x.ctypes.data, y.ctypes.data, n, b.DataType.Float32, b.RedOp.Sum, comm, 0),
                   nbytes, barrier)
        ag = timed(lambda: b.all_gather(x.ctypes.data, g.ctypes.data, n, b.DataType.Float32, comm, 0), nbytes, barrier)
        out[nbytes] = (ar, ag)
    b.comm_destroy(comm)
    return out


def worker_mpi(max_bytes):
    from mpi4py import MPI

    c = MPI.COMM_WORLD
    out = {}
    for nbytes in sizes(max_bytes):
        n = nbytes // 4
        x, y, g = np.ones(n, np.float32), np.empty(n, np.float32), np.empty(n * NRANKS, np.float32)
        ar = timed(lambda: c.Allreduce(x, y, op=MPI.SUM), nbytes, c.Barrier)
        ag = timed(lambda: c.Allgather(x, g), nbytes, c.Barrier)
        out[nbytes] = (ar, ag)
    return c.Get_rank(), out


def worker_gloo(rank, init_file, max_bytes):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=NRANKS)
    out = {}
    for nbytes in sizes(max_bytes):
        n = nbytes // 4
        x = torch.ones(n, dtype=torch.float32)
        parts = [torch.empty(n, dtype=torch.float32) for _ in range(NRANKS)]
        ar = timed(lambda: dist.all_reduce(x), nbytes, dist.barrier)
        ag = timed(lambda: dist.all_gather(parts, x), nbytes, dist.barrier)
        out[nbytes] = (ar, ag)
    dist.destroy_process_group()
    return out


def spawn_pair(mode, extra_env, max_bytes):
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, f"r{r}.json") for r in range(NRANKS)]
        for r in range(NRANKS):
            env = dict(os.environ, BENCH_RANK=str(r), BENCH_OUT=outs[r], BENCH_TMP=tmp, **extra_env)
            procs.append(subprocess.Popen([sys.executable, __file__, "--worker", mode, "--max-bytes", str(max_bytes)],
                                          env=env))
        if any(p.wait(timeout=900) != 0 for p in procs):
            return None
        with open(outs[0]) as f:
            return {int(k): v for k, v in json.load(f).items()}


def run_mpi(max_bytes):
    mpiexec = shutil.which("mpiexec") or os.path.join(os.path.dirname(sys.executable), "mpiexec")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    if not os.path.exists(mpiexec):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "mpi.json")
        cmd = [mpiexec, "-n", str(NRANKS), sys.executable, __file__, "--worker", "mpi", "--max-bytes", str(max_bytes)]
        if subprocess.run(cmd, env=dict(os.environ, BENCH_OUT=out), timeout=900).returncode != 0:
            return None
        with open(out) as f:
            return {int(k): v for k, v in json.load(f).items()}


def busbw(kind, nbytes, t):
    if kind == "ar":
        return nbytes / t * 2 * (NRANKS - 1) / NRANKS / 1e9
    return NRANKS * nbytes / t * (NRANKS - 1) / NRANKS / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker == "nccl4py":
        res = worker_nccl4py(int(os.environ["BENCH_RANK"]), os.environ["BENCH_UID"], args.max_bytes)
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump(res, f)
        return 0
    if args.worker == "gloo":
        res = worker_gloo(int(os.environ["BENCH_RANK"]), os.path.join(os.environ["BENCH_TMP"], "gloo_init"),
                          args.max_bytes)
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump(res, f)
        return 0
    if args.worker == "mpi":
        rank, res = worker_mpi(args.max_bytes)
        if rank == 0:
            with open(os.environ["BENCH_OUT"], "w") as f:
                json.dump(res, f)
        return 0

    import nccl.bindings.nccl as b

    uid = bytes(b.get_unique_id()).hex()
    results = {"nccl4py-host": spawn_pair("nccl4py", {"BENCH_UID": uid, "NCCL_LIBRARY": b.get_library_path()},
                                          args.max_bytes)}
    results["mpi"] = run_mpi(args.max_bytes)
    try:
        import torch  # noqa: F401
        results["gloo"] = spawn_pair("gloo", {}, args.max_bytes)
    except ImportError:
        results["gloo"] = None
    ours = results["nccl4py-host"]
    if ours is None:
        print("the nccl4py ranks failed", file=sys.stderr)
        return 1
    for kind, label in (("ar", "allreduce"), ("ag", "allgather")):
        k = 0 if kind == "ar" else 1
        print(f"\n{label} at {NRANKS} ranks (time in us, busbw in GB/s)")
        head = f"{'bytes':>10} {'ours us':>9} {'busbw':>7}"
        for other in ("mpi", "gloo"):
            if results[other]:
                head += f" {other + ' us':>9} {'busbw':>7} {'ours/' + other:>9}"
        print(head)
        for nbytes in sizes(args.max_bytes):
            t = ours[nbytes][k]
            row = f"{nbytes:>10} {t * 1e6:>9.1f} {busbw(kind, nbytes, t):>7.2f}"
            for other in ("mpi", "gloo"):
                if results[other]:
                    to = results[other][nbytes][k]
                    row += f" {to * 1e6:>9.1f} {busbw(kind, nbytes, to):>7.2f} {t / to:>9.2f}"
            print(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
