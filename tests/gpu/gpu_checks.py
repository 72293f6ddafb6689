"""nccl.core on a real GPU with the real NCCL: a one-rank communicator through every collective
on torch and cupy device tensors, every collective again with nccl4py 0.6.0's config= (through
ncclXxxConfig on NCCL >= 2.31), properties and team_world against the library's own answers,
an allreduce captured in a CUDA graph and replayed, and (NCCL >= 2.29) a window over mem_alloc memory
with a put_signal/wait_signal round to the rank itself: the same code tests/multirank/test_rma.py runs
on the host backend. Run by tests/gpu/run_checks.sh; prints PASS/FAIL/SKIP per check and exits 1 on any failure."""

import sys
import traceback

import numpy as np

import nccl.core as nc
from nccl.bindings import nccl as low

results = []


def check(name):
    def wrap(fn):
        try:
            outcome = fn()
            results.append((name, "SKIP" if outcome == "skip" else "PASS", ""))
        except Exception as exc:  # noqa: BLE001 - every failure is reported, the run goes on
            results.append((name, "FAIL", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"))
        return fn

    return wrap


print(f"library: {low.get_library_path()} ({low.get_library_flavour()}), version {low.get_version()}")
comm = nc.Communicator.init(nranks=1, rank=0, unique_id=nc.get_unique_id())
print(repr(comm))


def every_collective(empty, full, to_host, stream, config=None):
    """One rank: each collective's result equals its input (sum over one rank)."""
    n = 1024
    x = full(n, 3.0)
    y = empty(n)
    comm.allreduce(x, y, nc.SUM, stream=stream, config=config)
    comm.reduce(x, y, nc.MAX, root=0, stream=stream, config=config)
    comm.broadcast(x, y, root=0, stream=stream, config=config)
    comm.allgather(x, y, stream=stream, config=config)
    comm.gather(x, y, root=0, stream=stream, config=config)
    comm.reduce_scatter(x, y, nc.SUM, stream=stream, config=config)
    comm.alltoall(x, y, stream=stream, config=config)
    comm.scatter(x, y, root=0, stream=stream, config=config)
    with nc.group():
        comm.send(x, 0, stream=stream)
        comm.recv(y, 0, stream=stream)
    comm.allreduce(y, y, nc.SUM, stream=stream)  # in place
    got = to_host(y)
    if not np.array_equal(got, np.full(n, 3.0, np.float32)):
        raise AssertionError(f"wrong result {got[:4]}")


@check("torch: every collective on cuda tensors")
def torch_collectives():
    try:
        import torch
    except ImportError:
        return "skip"
    s = torch.cuda.Stream()
    every_collective(lambda n: torch.empty(n, device="cuda"), lambda n, v: torch.full((n,), v, device="cuda"),
                     lambda t: (torch.cuda.synchronize(), t.cpu().numpy())[1], s)


@check("cupy: every collective on device arrays")
def cupy_collectives():
    try:
        import cupy
    except ImportError:
        return "skip"
    s = cupy.cuda.Stream(non_blocking=True)
    every_collective(lambda n: cupy.empty(n, cupy.float32), lambda n, v: cupy.full(n, v, cupy.float32),
                     lambda a: (cupy.cuda.runtime.deviceSynchronize(), cupy.asnumpy(a))[1], s)


@check("torch: every collective with config=NCCLCollConfig (ncclXxxConfig)")
def torch_config_collectives():
    try:
        import torch
    except ImportError:
        return "skip"
    if low.get_version() < 23100:
        return "skip"  # no ncclXxxConfig before NCCL 2.31
    s = torch.cuda.Stream()
    cfg = nc.NCCLCollConfig(min_ctas=1, max_ctas=8, cta_policy=nc.CTAPolicy.DEFAULT)
    every_collective(lambda n: torch.empty(n, device="cuda"), lambda n, v: torch.full((n,), v, device="cuda"),
                     lambda t: (torch.cuda.synchronize(), t.cpu().numpy())[1], s, config=cfg)
    every_collective(lambda n: torch.empty(n, device="cuda"), lambda n, v: torch.full((n,), v, device="cuda"),
                     lambda t: (torch.cuda.synchronize(), t.cpu().numpy())[1], s, config=nc.NCCLCollConfig())


@check("properties and team_world against the library")
def properties_and_teams():
    p = comm.properties
    if (p.rank, p.n_ranks) != (0, 1) or p.cuda_dev != comm.cuda_dev or p.nvml_dev != comm.nvml_dev:
        raise AssertionError(f"properties {p}")
    if p.gin_type != comm.gin_type or p.multimem_support != comm.multimem_support:
        raise AssertionError(f"properties {p} against the getters")
    print(f"      ({p})")
    world = comm.team_world
    if (world.n_ranks, world.rank) != (1, 0) or comm.team_rank_to_world(world, 0) != 0:
        raise AssertionError(f"team_world {world}")


@check("torch: allreduce captured in a CUDA graph and replayed")
def graph_replay():
    try:
        import torch
    except ImportError:
        return "skip"
    x = torch.ones(4096, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        comm.allreduce(x, x, nc.SUM, stream=s)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        comm.allreduce(x, x, nc.SUM, stream=s)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    if not torch.equal(x, torch.ones_like(x)):
        raise AssertionError("graph replay changed a one-rank sum")


@check("torch: window over mem_alloc memory, put_signal to oneself, wait_signal (NCCL >= 2.29)")
def window_put_signal():
    try:
        import torch
    except ImportError:
        return "skip"
    if low.get_version() < 22902:
        return "skip"  # no ncclPutSignal before NCCL 2.29
    buf = nc.mem_alloc(4096)
    view = torch.utils.dlpack.from_dlpack(buf).view(torch.float32)
    view.zero_()
    torch.cuda.synchronize()
    win = comm.register_window(buf)
    s = torch.cuda.Stream()
    src = torch.arange(16, dtype=torch.float32, device="cuda")
    comm.put_signal(src, 0, win, 8, stream=s)  # offset in elements of src
    comm.wait_signal(nc.WaitSignalDesc(0), stream=s)
    s.synchronize()
    got = view[:32].cpu().numpy()
    win.close()
    nc.mem_free(buf)
    want = np.zeros(32, np.float32)
    want[8:24] = np.arange(16)
    if not np.array_equal(got, want):
        raise AssertionError(f"window after put_signal: {got}")


@check("host numpy array on a GPU communicator is rejected")
def host_memory_rejected():
    try:
        comm.allreduce(np.ones(4, np.float32), np.ones(4, np.float32), nc.SUM)
    except nc.NcclInvalid as exc:
        print(f"      (rejected: {exc.msg})")
    else:
        raise AssertionError("numpy buffer accepted on a GPU communicator")


comm.destroy()
for name, outcome, detail in results:
    print(f"{outcome:4}  {name}")
    if detail:
        print("      " + detail.replace("\n", "\n      "))
sys.exit(1 if any(o == "FAIL" for _, o, _ in results) else 0)
