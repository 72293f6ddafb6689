"""The host backend against MPI and gloo, nccl-tests style: allreduce, allgather, broadcast,
reduce_scatter and alltoall, at 2 ranks and at 4 ranks (on a 2-core machine: oversubscribed), all
backends in the same run. Not a test: speed lives here, as ratios taken side by side.

    python benchmarks/host_bandwidth.py                      # the full table (about 3 minutes)
    python benchmarks/host_bandwidth.py --runs 7 --json t.json   # steadier medians, raw times kept
    python benchmarks/host_bandwidth.py -c allreduce,allgather -r 2 --sizes 8,64K,16M
    python benchmarks/host_bandwidth.py --baseline-lib /path/to/old/libnccl-host.so   # before/after
    python benchmarks/host_bandwidth.py -b base --base-env NCCL_HOST_DIRECT=0     # one switch's effect
    python benchmarks/host_bandwidth.py --interleave -b mpi,gloo --runs 3 --reps 3   # paired cell by cell
    python benchmarks/host_bandwidth.py --interleave -b mpi --lib /path/to/old/libnccl-host.so   # "before", paired

Backends (each in its own ranks, started fresh for every run):
  nccl4py  this package's nccl.core on the bundled host backend (numpy buffers; --lib: another library)
  base     the same, on the library given by --baseline-lib (an older build: "before") and/or
           with the environment of --base-env
  mpi      mpi4py on numpy under the mpich wheel's mpiexec (Allreduce, Allgather, Bcast,
           Reduce_scatter_block, Alltoall)
  gloo     torch.distributed's gloo backend on CPU tensors (all_reduce, all_gather_into_tensor,
           broadcast, reduce_scatter_tensor, all_to_all_single); a collective gloo lacks shows n/a
A backend that is not installed is left out with a note. `python -m nccl.run -n 4 -m nccl.bench
-c allreduce,allgather,broadcast,reduce_scatter,alltoall` measures the library alone, nccl-tests
style, checking every result.

Method. "size" is the bytes of the whole operation as nccl-tests counts them (float32): the
buffer of allreduce and broadcast, the gathered, reduced or exchanged total of allgather,
reduce_scatter and alltoall (each rank's block is size / nranks). For every cell the ranks warm
up, time a few calls, agree on the largest of those times, and size the timed loop so that it
lasts about --cell-time seconds (at least two calls); the loop follows a barrier, runs back to back, and its time per
call is taken on every rank; the cell's time is the slowest rank's (nccl-tests' convention).
Broadcast is in place for every backend (MPI and gloo only have that form); the others are out
of place.
Each run starts every backend afresh, in a rotated order, so slow phases of a shared machine
spread over all of them. With --interleave the pairing is finer: each run is one job under
mpiexec whose ranks hold a communicator of every backend (nccl4py, mpi, gloo), and every cell is
timed --reps times with each backend in turn (rotated) before the next cell starts, so the times
a ratio compares were taken within a second of each other; a ratio is then the median over runs x
reps. (The base backend needs a library of its own, so it cannot be interleaved.) MPI's
shared-memory path polls: when other work competes for the CPUs its times grow to scheduler
time slices (milliseconds), so a table against MPI means something only on an otherwise idle
machine. On a machine shared with other work, even the medians of a few runs
move by tens of percent; take ratios, not absolute times, and more runs for a table to keep. A cell shows the median over --runs runs and, after "±", half the
range (max - min) as a percentage of that median. A ratio column (ours/mpi, ours/gloo,
ours/base) is the median of the per-run ratios, each taken between the two backends' times of
the same run: below 1 means nccl4py is faster. busbw follows nccl-tests: allreduce
size/t * 2(n-1)/n; allgather, reduce_scatter, alltoall size/t * (n-1)/n; broadcast size/t.

The physical limit. Every run also measures this machine's memcpy bandwidth: a numpy copy of a
buffer several times the last-level cache (bytes copied per second, the best of several copies),
once in the driver before the run (one process alone) and once in every job, by all its ranks at
the same time after a barrier (the slowest rank's: what each rank of a collective can copy while
its peers copy too). Each table's header shows both (medians over runs), and every cell of
64 KiB and more shows, after the ratio columns, each other backend's busbw and nccl4py's busbw
as a fraction of the concurrent memcpy bandwidth ("of memcpy"). A shared-memory collective
copies every byte at least once on its way (twice through a staging buffer), so that fraction
is the share of the machine's copy speed it reaches; above 1, the cell's buffers were served
partly from the caches (16 MiB fits a 32 MiB last-level cache). --json keeps the measurements under
"memcpy_gbps".

The host backend's own switches apply to its ranks as usual (NCCL_HOST_SPIN_US,
NCCL_HOST_DIRECT, ...); --env KEY=VALUE sets one for the nccl4py and base ranks, --base-env for
the base ranks only (after --env). Each table's header says what the library chose for that rank
count (spin, single-copy transport), as its NCCL_DEBUG=INFO line does.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

COLLECTIVES = ("allreduce", "allgather", "broadcast", "reduce_scatter", "alltoall")
BLOCKED = {"allgather", "reduce_scatter", "alltoall"}
DEFAULT_SIZES = "8,64,512,4K,32K,64K,256K,1M,4M,16M,64M"
BACKENDS = ("nccl4py", "base", "mpi", "gloo")
JOB_TIMEOUT_S = 900


def parse_size(text):
    from nccl.bench import parse_size as ps

    return ps(text)


LARGE = 64 << 10  # cells from this size on show busbw beside the memcpy bandwidth
MEMCPY_REPS = 5


def memcpy_buffer_bytes():
    """A copy buffer several times the last-level cache (at least 64 MiB), so that the copy runs
    from and to memory, as a large collective's does."""
    llc = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    names = os.listdir(base) if os.path.isdir(base) else []
    for idx in (name for name in names if name.startswith("index")):
        try:
            with open(os.path.join(base, idx, "size")) as f:
                text = f.read().strip()
            shift = {"K": 10, "M": 20}.get(text[-1:], 0)
            llc = max(llc, int(text[:-1] if shift else text) << shift)
        except (OSError, ValueError):
            continue
    return max(64 << 20, 4 * llc)


def memcpy_gbps(nbytes=None, reps=MEMCPY_REPS):
    """This process's memcpy bandwidth in GB/s (bytes copied per second): the best of reps numpy
    copies of a buffer larger than the caches, after one untimed copy that faults the pages in."""
    nbytes = nbytes or memcpy_buffer_bytes()
    src = np.ones(nbytes, np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e9


def concurrent_memcpy(ops):
    """memcpy_gbps taken by every rank of a job at once (after a barrier): the slowest rank's."""
    ops.barrier()
    return -ops.agree_max(-memcpy_gbps())


def bus_factor(coll, n):
    if coll == "allreduce":
        return 2 * (n - 1) / n
    if coll in BLOCKED:
        return (n - 1) / n
    return 1.0


# ---------------------------------------------------------------------------------------------
# Rank side: one job runs every (collective, size) cell and writes {coll: {size: seconds}}.
# ---------------------------------------------------------------------------------------------

class Ops:
    """One backend's calls on numpy-sized buffers: setup(coll, count) -> call, plus barrier and
    agree_max (the largest of a float over the ranks)."""


class NcclOps(Ops):
    def __init__(self, rank, nranks, uid_hex):
        import nccl.core as nccl

        self.nccl = nccl
        self.comm = nccl.Communicator.init(nranks=nranks, rank=rank,
                                           unique_id=nccl.UniqueId.from_bytes(bytes.fromhex(uid_hex)))
        self.one = np.zeros(1, np.float32)
        self.f = np.zeros(1, np.float64)
        self.g = np.zeros(1, np.float64)

    def barrier(self):
        self.comm.allreduce(self.one, self.one, self.nccl.SUM)

    def agree_max(self, x):
        self.f[0] = x
        self.comm.allreduce(self.f, self.g, self.nccl.MAX)
        return float(self.g[0])

    def setup(self, coll, count, n):
        c, nc = self.comm, self.nccl
        if coll == "allreduce":
            x, y = np.ones(count, np.float32), np.empty(count, np.float32)
            return lambda: c.allreduce(x, y, nc.SUM)
        if coll == "broadcast":
            x = np.ones(count, np.float32)
            return lambda: c.broadcast(x, x, root=0)
        b = count // n
        if coll == "allgather":
            x, y = np.ones(b, np.float32), np.empty(b * n, np.float32)
            return lambda: c.allgather(x, y)
        if coll == "reduce_scatter":
            x, y = np.ones(b * n, np.float32), np.empty(b, np.float32)
            return lambda: c.reduce_scatter(x, y, nc.SUM)
        x, y = np.ones(b * n, np.float32), np.empty(b * n, np.float32)
        return lambda: c.alltoall(x, y)

    def close(self):
        self.comm.destroy()


class MpiOps(Ops):
    def __init__(self):
        from mpi4py import MPI

        self.MPI = MPI
        self.c = MPI.COMM_WORLD
        self.rank, self.nranks = self.c.Get_rank(), self.c.Get_size()

    def barrier(self):
        self.c.Barrier()

    def agree_max(self, x):
        return self.c.allreduce(x, op=self.MPI.MAX)

    def setup(self, coll, count, n):
        c, MPI = self.c, self.MPI
        if coll == "allreduce":
            x, y = np.ones(count, np.float32), np.empty(count, np.float32)
            return lambda: c.Allreduce(x, y, op=MPI.SUM)
        if coll == "broadcast":
            x = np.ones(count, np.float32)
            return lambda: c.Bcast(x, root=0)
        b = count // n
        if coll == "allgather":
            x, y = np.ones(b, np.float32), np.empty(b * n, np.float32)
            return lambda: c.Allgather(x, y)
        if coll == "reduce_scatter":
            x, y = np.ones(b * n, np.float32), np.empty(b, np.float32)
            return lambda: c.Reduce_scatter_block(x, y, op=MPI.SUM)
        x, y = np.ones(b * n, np.float32), np.empty(b * n, np.float32)
        return lambda: c.Alltoall(x, y)

    def close(self):
        pass


class GlooOps(Ops):
    def __init__(self, rank, nranks, init_file):
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        self.torch, self.dist = torch, dist
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=nranks)
        self.f = torch.zeros(1, dtype=torch.float64)

    def barrier(self):
        self.dist.barrier()

    def agree_max(self, x):
        self.f[0] = x
        self.dist.all_reduce(self.f, op=self.dist.ReduceOp.MAX)
        return float(self.f[0])

    def setup(self, coll, count, n):
        torch, dist = self.torch, self.dist
        if coll == "allreduce":
            x = torch.ones(count, dtype=torch.float32)
            return lambda: dist.all_reduce(x)
        if coll == "broadcast":
            x = torch.ones(count, dtype=torch.float32)
            return lambda: dist.broadcast(x, src=0)
        b = count // n
        if coll == "allgather":
            x, y = torch.ones(b, dtype=torch.float32), torch.empty(b * n, dtype=torch.float32)
            return lambda: dist.all_gather_into_tensor(y, x)
        if coll == "reduce_scatter":
            x, y = torch.ones(b * n, dtype=torch.float32), torch.empty(b, dtype=torch.float32)
            return lambda: dist.reduce_scatter_tensor(y, x)
        x, y = torch.ones(b * n, dtype=torch.float32), torch.empty(b * n, dtype=torch.float32)
        return lambda: dist.all_to_all_single(y, x)

    def close(self):
        self.dist.destroy_process_group()


def time_cell(ops, call, cell_time):
    """Seconds per call, the slowest rank's; None when the backend cannot run the collective (the
    same answer on every rank, so no rank is left waiting)."""
    try:
        call()  # also the warm-up
        ok = 0.0
    except (RuntimeError, NotImplementedError, ValueError):
        ok = 1.0
    if ops.agree_max(ok) > 0:
        return None
    t0 = time.perf_counter()
    call()
    probe = ops.agree_max(time.perf_counter() - t0)
    iters = max(2, min(5000, int(cell_time / max(probe, 1e-7))))
    ops.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    return ops.agree_max((time.perf_counter() - t0) / iters)


def cells(plan, nranks):
    """(collective, size, float32 count) of every cell of the plan that has data at nranks: the
    blocked collectives round the count down to whole blocks."""
    for coll in plan["collectives"]:
        for size in plan["sizes"]:
            count = size // 4
            if coll in BLOCKED:
                count -= count % nranks
            if count > 0:
                yield coll, size, count


def rank_job(ops, nranks, plan):
    out = {}
    for coll, size, count in cells(plan, nranks):
        call = ops.setup(coll, count, nranks)
        out.setdefault(coll, {})[str(size)] = time_cell(ops, call, plan["cell_time"])
    return out


def interleaved_job(ops, nranks, plan):
    """{backend: [one {coll: {size: seconds}} per repetition]}: every backend of the job times each
    cell in turn, --reps times, in a rotated order, before the next cell starts; so the backends of
    one repetition ran within a second of one another."""
    names = list(ops)
    reps = plan["reps"]
    out = {name: [{} for _ in range(reps)] for name in names}
    for coll, size, count in cells(plan, nranks):
        calls = {name: ops[name].setup(coll, count, nranks) for name in names}
        for rep in range(reps):
            k = rep % len(names)
            for name in names[k:] + names[:k]:
                out[name][rep].setdefault(coll, {})[str(size)] = time_cell(ops[name], calls[name], plan["cell_time"])
        del calls
    return out


def interleaved_worker(plan):
    """A rank under mpiexec holding every backend of plan["interleave"] at once (the nccl4py
    communicator's id travels over MPI from rank 0)."""
    mpi = MpiOps()
    rank, nranks = mpi.rank, mpi.nranks
    ops = {}
    for name in plan["interleave"]:
        if name == "mpi":
            ops[name] = mpi
        elif name == "gloo":
            ops[name] = GlooOps(rank, nranks, os.path.join(os.environ["BENCH_TMP"], "gloo_init"))
        else:
            uid = None
            if rank == 0:
                import nccl.bindings.nccl as b

                uid = bytes(b.get_unique_id()).hex()
            ops[name] = NcclOps(rank, nranks, mpi.c.bcast(uid, root=0))
    bw = concurrent_memcpy(mpi)
    res = interleaved_job(ops, nranks, plan)
    res = {"cells": res, "memcpy_gbps": bw}
    for name, o in ops.items():
        if name != "mpi":
            o.close()
    return rank, res


def single_worker(kind, plan):
    """A rank of one backend's job."""
    if kind == "mpi":
        ops = MpiOps()
        rank, nranks = ops.rank, ops.nranks
    else:
        rank, nranks = int(os.environ["BENCH_RANK"]), int(os.environ["BENCH_NRANKS"])
        if kind == "gloo":
            ops = GlooOps(rank, nranks, os.path.join(os.environ["BENCH_TMP"], "gloo_init"))
        else:
            ops = NcclOps(rank, nranks, os.environ["BENCH_UID"])
    bw = concurrent_memcpy(ops)
    res = {"cells": rank_job(ops, nranks, plan), "memcpy_gbps": bw}
    ops.close()
    return rank, res


def worker_main(kind):
    plan = json.loads(os.environ["BENCH_PLAN"])
    rank, res = interleaved_worker(plan) if kind == "interleaved" else single_worker(kind, plan)
    if rank == 0:
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump(res, f)
    return 0


# ---------------------------------------------------------------------------------------------
# Driver side
# ---------------------------------------------------------------------------------------------

def mpiexec_path():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


def available(backend, args):
    """None when usable, else the reason it is left out."""
    if backend == "base":
        if not args.baseline_lib and not args.base_env:
            return "neither --baseline-lib nor --base-env"
        if args.baseline_lib and not os.path.exists(args.baseline_lib):
            return f"{args.baseline_lib} does not exist"
        return None
    if backend == "mpi":
        try:
            import mpi4py  # noqa: F401
        except ImportError:
            return "mpi4py is not installed"
        return None if mpiexec_path() else "no mpiexec"
    if backend == "gloo":
        try:
            import torch.distributed  # noqa: F401
        except ImportError:
            return "torch is not installed"
    return None


def run_job(backend, nranks, plan, args, log):
    """({coll: {size: seconds or None}} from rank 0, the job's concurrent memcpy GB/s), or
    (None, None) when the job failed."""
    with tempfile.TemporaryDirectory(prefix="nccl-bench-") as tmp:
        out = os.path.join(tmp, "r0.json")
        env = dict(os.environ, BENCH_PLAN=json.dumps(plan), BENCH_OUT=out, BENCH_TMP=tmp, OMP_NUM_THREADS="1")
        me = [sys.executable, os.path.abspath(__file__), "--worker", backend]
        if backend == "interleaved":
            env.update(args.host_env)
            env["NCCL_LIBRARY"] = args.lib
        if backend in ("mpi", "interleaved"):
            procs = [subprocess.Popen([mpiexec_path(), "-n", str(nranks), *me], env=env, stdout=log, stderr=log)]
        else:
            if backend in ("nccl4py", "base"):
                import nccl.bindings.nccl as b

                env.update(args.host_env)
                if backend == "base":
                    env.update(args.base_env)
                env["NCCL_LIBRARY"] = args.baseline_lib if backend == "base" and args.baseline_lib else args.lib
                env["BENCH_UID"] = bytes(b.get_unique_id()).hex()
            procs = []
            for r in range(nranks):
                e = dict(env, BENCH_RANK=str(r), BENCH_NRANKS=str(nranks))
                procs.append(subprocess.Popen(me, env=e, stdout=log, stderr=log))
        deadline = time.monotonic() + JOB_TIMEOUT_S
        ok = True
        for p in procs:
            try:
                ok &= p.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
            except subprocess.TimeoutExpired:
                ok = False
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if not ok or not os.path.exists(out):
            return None, None
        with open(out) as f:
            got = json.load(f)
        return got["cells"], got["memcpy_gbps"]


def library_choice(args, nranks):
    """What the host backend chose for a communicator of nranks (its INFO line), or ''."""
    code = ("import nccl.core as n, os\n"
            "c = n.Communicator.init(nranks=int(os.environ['N']), rank=int(os.environ['R']),"
            " unique_id=n.UniqueId.from_bytes(bytes.fromhex(os.environ['U'])))\n"
            "c.destroy()\n")
    import nccl.bindings.nccl as b

    env = dict(os.environ, NCCL_LIBRARY="host", NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT", N=str(nranks),
               U=bytes(b.get_unique_id()).hex(), **args.host_env)
    procs = [subprocess.Popen([sys.executable, "-c", code], env=dict(env, R=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(nranks)]
    text = procs[0].communicate(timeout=120)[0]
    for p in procs[1:]:
        p.communicate(timeout=120)
    lines = [ln.split("NCCL-HOST INFO ", 1)[1] for ln in text.splitlines() if "transport:" in ln]
    return lines[0] if lines else ""


def spread_pct(xs):
    m = statistics.median(xs)
    return 100.0 * (max(xs) - min(xs)) / 2 / m if m > 0 else 0.0


def fmt_time(xs):
    if not xs:
        return f"{'n/a':>14}"
    med = statistics.median(xs) * 1e6
    txt = f"{med:.1f}" if med < 1000 else f"{med:.0f}"
    return f"{txt + ' ±' + format(spread_pct(xs), '.0f') + '%':>14}"


def paired_ratio(mine, other):
    pairs = [a / b for a, b in zip(mine, other) if a is not None and b is not None and b > 0]
    return statistics.median(pairs) if pairs else None


def report(results, args, nranks, plan, notes, memcpy):
    """results[backend] = list over runs of {coll: {size: t}}; prints one table per collective.
    memcpy: {"driver": [GB/s per run], "ranks": [GB/s per job]}."""
    present = [b for b in BACKENDS if b in results and any(results[b])]
    others = [b for b in present if b != "nccl4py"]
    print(f"\n=== {nranks} ranks on {len(os.sched_getaffinity(0))} CPU(s)"
          f"{' (oversubscribed)' if nranks > len(os.sched_getaffinity(0)) else ''}, {args.runs} runs"
          f"{f' x {args.reps} interleaved turns' if args.interleave else ''} ===")
    if notes:
        print(f"host backend: {notes}")
    alone = [x for x in memcpy["driver"] if x]
    together = [x for x in memcpy["ranks"] if x]
    limit = statistics.median(together) if together else None
    if alone or together:
        print(f"memcpy bandwidth ({human(memcpy_buffer_bytes())} buffer, best of {MEMCPY_REPS}): "
              + (f"{statistics.median(alone):.2f} GB/s one process alone" if alone else "")
              + (", " if alone and together else "")
              + (f"{limit:.2f} GB/s per rank with {nranks} ranks copying at once" if together else "")
              + f" (median over {max(len(alone), len(together))} measurements)")
    for coll in plan["collectives"]:
        print(f"\n{coll}: time per call in us (median ±half-range %), busbw GB/s; ratios < 1: nccl4py faster")
        head = f"{'size':>9} {'nccl4py us':>14} {'busbw':>6}"
        for b in others:
            head += f" {b + ' us':>14} {'ours/' + b:>10}"
        for b in others:
            head += f" {b + ' bw':>8}"
        head += f" {'of memcpy':>9}"
        print(head)
        for size in plan["sizes"]:
            key = str(size)

            def series(b):
                return [run.get(coll, {}).get(key) if run else None for run in results[b]]

            mine = series("nccl4py")
            good = [t for t in mine if t is not None]
            if not good and all(not [t for t in series(b) if t is not None] for b in others):
                continue
            bw = busbw(coll, size, nranks, good)
            row = f"{human(size):>9} {fmt_time(good)} {bw or 0.0:>6.2f}"
            for b in others:
                theirs = series(b)
                r = paired_ratio(mine, theirs)
                row += f" {fmt_time([t for t in theirs if t is not None])} {(f'{r:.2f}' if r else 'n/a'):>10}"
            if size >= LARGE:
                for b in others:
                    theirs = busbw(coll, size, nranks, [t for t in series(b) if t is not None])
                    row += f" {(f'{theirs:.2f}' if theirs else 'n/a'):>8}"
                row += f" {(f'{bw / limit:.2f}' if bw and limit else 'n/a'):>9}"
            print(row)


def busbw(coll, size, nranks, times):
    """nccl-tests' bus bandwidth in GB/s from the median of times, or None without times."""
    if not times:
        return None
    return size / statistics.median(times) * bus_factor(coll, nranks) / 1e9


def human(n):
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return str(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("-c", "--collectives", default=",".join(COLLECTIVES),
                    help="comma-separated subset of " + ", ".join(COLLECTIVES))
    ap.add_argument("-r", "--ranks", default="2,4", help="comma-separated rank counts (default 2,4)")
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma-separated sizes, K/M suffixes (default {DEFAULT_SIZES})")
    ap.add_argument("--runs", type=int, default=3, help="fresh runs per backend; cells show the median (default 3)")
    ap.add_argument("--cell-time", type=float, default=0.03,
                    help="seconds each timed loop aims for (default 0.03; at least 2 calls)")
    ap.add_argument("-b", "--backends", default="nccl4py,base,mpi,gloo", help="comma-separated subset of " +
                    ", ".join(BACKENDS) + " (nccl4py is always run)")
    ap.add_argument("--baseline-lib", help="another libnccl-host.so to run as backend 'base' (e.g. before a change)")
    ap.add_argument("--lib", default="host", metavar="PATH",
                    help="the library of the nccl4py ranks (default: the bundled host backend); with "
                         "--interleave the way to pair an older build with MPI in the same run")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment for the nccl4py and base ranks only (repeatable)")
    ap.add_argument("--base-env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment for the base ranks only (repeatable; runs base on the bundled library "
                         "unless --baseline-lib is given)")
    ap.add_argument("--interleave", action="store_true",
                    help="run nccl4py, mpi and gloo in the same ranks (one mpiexec job per run), timing "
                         "each cell with every backend in turn before the next cell (not with base)")
    ap.add_argument("--reps", type=int, default=3,
                    help="with --interleave: turns per cell in each run (default 3); a ratio is the "
                         "median over runs x reps")
    ap.add_argument("--json", help="write every run's raw times here")
    ap.add_argument("--log", help="file for the ranks' output (default: discarded)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args.worker)

    colls = [c.strip() for c in args.collectives.split(",") if c.strip()]
    bad = [c for c in colls if c not in COLLECTIVES]
    if bad:
        ap.error(f"unknown collective {bad[0]!r}; choose from {', '.join(COLLECTIVES)}")
    sizes = sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()})
    ranks = [int(x) for x in args.ranks.split(",") if x.strip()]
    if not ranks or min(ranks) < 2 or args.runs < 1:
        ap.error("--ranks needs counts >= 2 and --runs at least 1")
    for name in ("env", "base_env"):
        parsed = {}
        for kv in getattr(args, name):
            k, eq, v = kv.partition("=")
            if not eq:
                ap.error(f"--{name.replace('_', '-')} wants KEY=VALUE, got {kv!r}")
            parsed[k] = v
        setattr(args, "host_env" if name == "env" else name, parsed)
    wanted = ["nccl4py"] + [b.strip() for b in args.backends.split(",") if b.strip() and b.strip() != "nccl4py"]
    backends = []
    for b in wanted:
        if b not in BACKENDS:
            ap.error(f"unknown backend {b!r}; choose from {', '.join(BACKENDS)}")
        why = available(b, args)
        if why is None:
            backends.append(b)
        elif b != "base" or args.baseline_lib or args.base_env:
            print(f"note: {b} left out: {why}")

    if args.interleave:
        if "base" in backends:
            ap.error("--interleave runs every backend in one process: base needs its own library "
                     "(leave it out with -b, or run without --interleave)")
        if "mpi" not in backends:
            ap.error("--interleave starts its ranks with mpiexec: it needs the mpi backend")
        if args.reps < 1:
            ap.error("--reps must be at least 1")

    os.environ.setdefault("NCCL_LIBRARY", "host")  # the driver makes the ids: the bundled host backend
    import nccl.bindings.nccl as b

    print(f"# host_bandwidth: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs "
          f"({len(os.sched_getaffinity(0))} usable), load average {os.getloadavg()[0]:.2f}")
    print(f"# library {b.get_library_path()}; backends {', '.join(backends)}; {args.runs} runs; "
          f"cell time {args.cell_time}s; "
          + (f"interleaved, {args.reps} turns per cell; " if args.interleave else "")
          + f"host env {args.host_env or '{}'}"
          + (f"; nccl4py on {args.lib}" if args.lib != "host" else "")
          + (f"; base: {args.baseline_lib or 'bundled library'} {args.base_env or ''}" if "base" in backends else ""))
    plan = {"collectives": colls, "sizes": sizes, "cell_time": args.cell_time}
    if args.interleave:
        plan.update(interleave=backends, reps=args.reps)
    log = open(args.log, "w") if args.log else subprocess.DEVNULL
    everything = {"argv": sys.argv[1:], "sizes": sizes, "collectives": colls, "runs": {}, "memcpy_gbps": {}}
    t_start = time.monotonic()
    try:
        for nranks in ranks:
            notes = library_choice(args, nranks)
            results = {bk: [] for bk in backends}
            memcpy = {"driver": [], "ranks": {bk: [] for bk in (["interleaved"] if args.interleave else backends)}}
            for run in range(args.runs):
                memcpy["driver"].append(memcpy_gbps())
                if args.interleave:
                    res, bw = run_job("interleaved", nranks, plan, args, log)
                    memcpy["ranks"]["interleaved"].append(bw)
                    if res is None:
                        print(f"note: the interleaved job at {nranks} ranks failed in run {run + 1}" +
                              ("" if args.log else " (--log FILE keeps the ranks' output)"))
                    for bk in backends:
                        results[bk].extend(res[bk] if res else [None] * args.reps)
                    continue
                order = backends[run % len(backends):] + backends[:run % len(backends)]
                for bk in order:
                    res, bw = run_job(bk, nranks, plan, args, log)
                    memcpy["ranks"][bk].append(bw)
                    if res is None:
                        print(f"note: {bk} at {nranks} ranks failed in run {run + 1}" +
                              ("" if args.log else " (--log FILE keeps the ranks' output)"))
                    results[bk].append(res)
            everything["runs"][str(nranks)] = results
            everything["memcpy_gbps"][str(nranks)] = memcpy
            report(results, args, nranks, plan, notes,
                   {"driver": memcpy["driver"], "ranks": [x for xs in memcpy["ranks"].values() for x in xs]})
    finally:
        if args.log:
            log.close()
    print(f"\n# {time.monotonic() - t_start:.0f} s, load average now {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)
    return 0 if everything["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
