"""torch.distributed through the "nccl4py" backend, against gloo and against nccl.core itself, on
CPU tensors: all_reduce, all_gather_into_tensor, reduce_scatter_tensor, broadcast and
all_to_all_single, side by side in the same ranks. Not a test: speed lives here, as ratios.

    python benchmarks/torch_backend.py                       # 1, 2, 4 and 8 ranks (a few minutes)
    python benchmarks/torch_backend.py -r 1 --sizes 8        # the per-call cost alone
    python benchmarks/torch_backend.py -r 2 --sizes 8,64K --reps 9
    python benchmarks/torch_backend.py --json out.json

Each rank count is one job under python -m nccl.run. Its ranks hold three ways to the same
collective: "core", nccl.core's Communicator called directly on the tensors (the process group's
own CPU communicator: the same library, the same communicator); "nccl4py", the torch.distributed
call on the default group (init_process_group("nccl4py")); "gloo", the same call on a gloo group
(dist.new_group(backend="gloo")). Every cell is timed --reps times, each time with the three in
turn (rotated), so the times a ratio compares were taken within a second of each other. A timed
loop follows a barrier and runs back to back; its length is sized from a few untimed calls to
last about --cell-time seconds; its time per call is the slowest rank's (nccl-tests'
convention). At one rank no call waits for a peer, and the loops are timed in the thread's CPU
time (time.thread_time), which other work on a shared machine inflates far less than wall time:
that table is the per-call cost of each way, the least over reps. From two ranks on, a cell is
the median over reps of wall time.

Columns: "added" is nccl4py - core in microseconds (what the torch backend adds to a call: torch's
own Python front end, the backend's dispatch, the Work), "/gloo" is nccl4py / gloo (below 1:
faster than gloo). The issue's targets: added <= 5 us; /gloo <= 0.05 up to 64 KiB and <= 0.3 from
1 MiB. Sizes are the bytes of the whole operation (float32), as benchmarks/host_bandwidth.py
counts them: each rank's block of allgather, reduce_scatter and alltoall is size / nranks.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

COLLECTIVES = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "all_to_all_single")
WAYS = ("core", "nccl4py", "gloo")
DEFAULT_SIZES = "8,1K,64K,1M,16M"
JOB_TIMEOUT_S = 1800


def parse_size(text):
    from nccl.bench import parse_size as ps

    return ps(text)


# ---------------------------------------------------------------------------------------------
# Rank side
# ---------------------------------------------------------------------------------------------

def _dist_calls(dist, group, coll, x, y):
    if coll == "all_reduce":
        return lambda: dist.all_reduce(x, group=group)
    if coll == "broadcast":
        return lambda: dist.broadcast(x, 0, group=group)
    # torch 2.13 renamed all_gather_into_tensor and reduce_scatter_tensor (all_gather_single,
    # reduce_scatter_single) and warns at every call of the old names: the new ones are timed
    if coll == "all_gather_into_tensor":
        gather = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)
        return lambda: gather(y, x, group=group)
    if coll == "reduce_scatter_tensor":
        scatter = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)
        return lambda: scatter(y, x, group=group)
    return lambda: dist.all_to_all_single(y, x, group=group)


def _core_calls(comm, coll, x, y):
    import nccl.core as nccl

    if coll == "all_reduce":
        return lambda: comm.allreduce(x, x, nccl.SUM)
    if coll == "broadcast":
        return lambda: comm.broadcast(x, x, 0)
    if coll == "all_gather_into_tensor":
        return lambda: comm.allgather(x, y)
    if coll == "reduce_scatter_tensor":
        return lambda: comm.reduce_scatter(x, y, nccl.SUM)
    return lambda: comm.alltoall(x, y)


def _buffers(torch, coll, count, n):
    if coll in ("all_reduce", "broadcast"):
        return torch.ones(count), None
    block = max(count // n, 1)
    if coll == "all_gather_into_tensor":
        return torch.ones(block), torch.empty(block * n)
    if coll == "reduce_scatter_tensor":
        return torch.ones(block * n), torch.empty(block)
    return torch.ones(block * n), torch.empty(block * n)


def rank_main(args):
    import torch
    import torch.distributed as dist

    import nccl.torch  # noqa: F401 - registers the backend
    from nccl.core import MAX, SUM

    dist.init_process_group("nccl4py")
    gloo = dist.new_group(backend="gloo")
    comm = dist.group.WORLD._cpu  # the process group's own nccl.core Communicator
    n, rank = dist.get_world_size(), dist.get_rank()
    scratch = torch.zeros(1, dtype=torch.float64)

    def slowest(seconds):
        scratch[0] = seconds
        comm.allreduce(scratch, scratch, MAX)
        return float(scratch[0])

    # One rank waits for no peer: its calls are timed in the thread's CPU time, which the other
    # work of a shared machine does not inflate (the per-call cost); several ranks in wall time.
    clock = time.thread_time if n == 1 else time.perf_counter

    def timed(call, iters):
        comm.allreduce(scratch, scratch, SUM)  # barrier
        t0 = clock()
        for _ in range(iters):
            call()
        return slowest((clock() - t0) / iters)

    results = {}
    for coll in args.collectives:
        for size in args.sizes:
            x, y = _buffers(torch, coll, max(size // 4, 1), n)
            calls = {"core": _core_calls(comm, coll, x, y), "nccl4py": _dist_calls(dist, None, coll, x, y),
                     "gloo": _dist_calls(dist, gloo, coll, x, y)}
            iters = {}
            for way, call in calls.items():
                for _ in range(2):
                    call()
                probe = timed(call, 3)
                iters[way] = max(3, min(20000, int(args.cell_time / max(probe, 1e-7))))
            cell = {way: [] for way in WAYS}
            for rep in range(args.reps):
                order = WAYS[rep % 3:] + WAYS[:rep % 3]
                for way in order:
                    cell[way].append(timed(calls[way], iters[way]))
            results[f"{coll}/{size}"] = cell
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(results, f)
    dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# Driver side
# ---------------------------------------------------------------------------------------------

def human(size):
    for unit, shift in (("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def run_job(nranks, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, "-m", "nccl.run", "-n", str(nranks), "--timeout", str(JOB_TIMEOUT_S), __file__,
               "--rank-side", "--out", out, "--reps", str(args.reps), "--cell-time", str(args.cell_time),
               "--sizes", ",".join(map(str, args.sizes)), "-c", ",".join(args.collectives)]
        env = dict(os.environ, NCCL_LIBRARY="host")
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def table(nranks, results, args):
    clock = f"thread CPU time, least of {args.reps}" if nranks == 1 else f"wall time, median of {args.reps}"
    print(f"\n{nranks} rank{'s' if nranks > 1 else ''} (microseconds per call, {clock}; slowest rank)")
    print(f"{'collective':<24}{'size':>6}{'core':>10}{'nccl4py':>10}{'gloo':>10}{'added':>9}{'/gloo':>8}")
    for coll in args.collectives:
        for size in args.sizes:
            cell = results[f"{coll}/{size}"]
            # the cost of a call (one rank, CPU time) is its least: interference only adds to it;
            # a time with peers (wall time) is the median
            pick = min if nranks == 1 else statistics.median
            med = {way: pick(cell[way]) * 1e6 for way in WAYS}
            added = med["nccl4py"] - med["core"]
            print(f"{coll:<24}{human(size):>6}{med['core']:>10.1f}{med['nccl4py']:>10.1f}{med['gloo']:>10.1f}"
                  f"{added:>9.1f}{med['nccl4py'] / med['gloo']:>8.3f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-r", "--ranks", default="1,2,4,8", help="rank counts (default 1,2,4,8)")
    p.add_argument("-c", "--collectives", default=",".join(COLLECTIVES))
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"bytes of the whole operation (default {DEFAULT_SIZES})")
    p.add_argument("--reps", type=int, default=5, help="timed loops per cell and way (default 5)")
    p.add_argument("--cell-time", type=float, default=0.1, help="seconds a timed loop lasts (default 0.1)")
    p.add_argument("--json", help="write every measurement here")
    p.add_argument("--rank-side", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    args.collectives = args.collectives.split(",")
    if args.rank_side:
        return rank_main(args)
    everything = {}
    for nranks in (int(r) for r in args.ranks.split(",")):
        everything[nranks] = run_job(nranks, args)
        table(nranks, everything[nranks], args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
