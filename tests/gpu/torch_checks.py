"""The "nccl4py" torch.distributed backend on a GPU machine (docs/api/torch.md#devices): CUDA tensors
on the loaded NCCL/RCCL on torch's current stream, CPU tensors on the same process group through
the second handle on the host backend, async Works, DDP on the GPU. One rank per GPU:

    python -m nccl.run -n <GPUs> tests/gpu/torch_checks.py

Run by tests/gpu/run_checks.sh; prints PASS/FAIL/SKIP per check (rank 0) and exits 1 on any failure.
"""

import os
import sys
import traceback

import torch
import torch.distributed as dist

import nccl.torch  # noqa: F401 - registers the backend
from nccl.bindings import nccl as low

results = []


def check(name):
    def wrap(fn):
        try:
            outcome = fn()
            results.append((name, "SKIP" if outcome == "skip" else "PASS", ""))
        except Exception as exc:  # noqa: BLE001 - every failure is reported, the run goes on
            results.append((name, "FAIL", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"))
        return fn

    return wrap


local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl4py")
r, n = dist.get_rank(), dist.get_world_size()
dev = torch.device("cuda", local)
want_sum = n * (n + 1) / 2
if r == 0:
    print(f"library: {low.get_library_path()} ({low.get_library_flavour()}), {n} rank(s)")


def expect(t, value, what):
    torch.cuda.synchronize()
    if not torch.all(t.cpu() == value):
        raise AssertionError(f"{what}: {t.cpu().tolist()[:8]}, expected {value}")


@check("cuda: the collectives on the current stream")
def collectives():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.full((1024,), float(r + 1), device=dev)
        dist.all_reduce(x)
        expect(x, want_sum, "all_reduce")
        b = torch.full((16,), float(r), device=dev)
        dist.broadcast(b, n - 1)
        expect(b, n - 1, "broadcast")
        out = torch.empty(16 * n, device=dev)
        dist.all_gather_into_tensor(out, torch.full((16,), float(r), device=dev))
        expect(out.view(n, 16)[n - 1], n - 1, "all_gather_into_tensor")
        rs = torch.empty(16, device=dev)
        dist.reduce_scatter_tensor(rs, torch.ones(16 * n, device=dev))
        expect(rs, n, "reduce_scatter_tensor")
        a2a = torch.empty(4 * n, device=dev)
        dist.all_to_all_single(a2a, torch.full((4 * n,), float(r), device=dev))
        expect(a2a.view(n, 4)[n - 1], n - 1, "all_to_all_single")


@check("cuda: async_op Work waits through an event; get_future")
def async_work():
    x = torch.ones(1 << 20, device=dev)
    work = dist.all_reduce(x, async_op=True)
    work.wait()
    value = work.get_future().wait()
    expect(value[0], n, "async all_reduce")


@check("cuda: isend/irecv around the ring, batch_isend_irecv")
def p2p():
    nxt, prv = (r + 1) % n, (r - 1) % n
    y = torch.empty(8, device=dev)
    reqs = [dist.isend(torch.full((8,), float(r), device=dev), nxt), dist.irecv(y, prv)]
    for q in reqs:
        q.wait()
    expect(y, prv, "isend/irecv")
    z = torch.empty(8, device=dev)
    for q in dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((8,), 7.0, device=dev), nxt),
                                     dist.P2POp(dist.irecv, z, prv)]):
        q.wait()
    expect(z, 7, "batch_isend_irecv")


@check("cpu tensors on the same group: the second handle on the host backend")
def cpu_on_gpu_machine():
    x = torch.full((8,), float(r + 1))
    dist.all_reduce(x)
    if not torch.all(x == want_sum):
        raise AssertionError(f"cpu all_reduce {x.tolist()}")
    objs = [None] * n
    dist.all_gather_object(objs, r)
    if objs != list(range(n)):
        raise AssertionError(f"all_gather_object {objs}")
    dist.barrier()


@check("DDP: a training step on the GPU matches across ranks")
def ddp():
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 8).to(dev), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 32, device=dev) * (r + 1)).sum().backward()
    opt.step()
    w = model.module.weight.detach().clone()
    ws = [torch.empty_like(w) for _ in range(n)]
    dist.all_gather(ws, w)
    if not all(torch.equal(v, w) for v in ws):
        raise AssertionError("DDP replicas differ after a step")


dist.destroy_process_group()
if r == 0:
    for name, outcome, detail in results:
        print(f"{outcome:4}  {name}")
        if detail:
            print("      " + detail.replace("\n", "\n      "))
sys.exit(1 if any(o == "FAIL" for _, o, _ in results) else 0)
