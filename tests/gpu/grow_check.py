"""Growing a communicator on the real NCCL (>= 2.29): a 2-rank communicator grows to 3 ranks,
the ranks being threads of this process (on one GPU, NCCL_MULTI_RANK_GPU_ENABLE=1 lets them
share it), the same calls as tests/multirank/ranks_grow.py makes on the host backend; then an
allreduce and an allgather on the grown communicator, and one on the parent.
Run by tests/gpu/run_checks.sh; prints PASS/FAIL/SKIP and exits 1 on failure."""

import os
import queue
import sys
import threading
import traceback

os.environ.setdefault("NCCL_MULTI_RANK_GPU_ENABLE", "1")  # read by NCCL at its first init

import nccl.core as nc  # noqa: E402
from nccl.bindings import nccl as low  # noqa: E402

NAME = "grow: 2 ranks -> 3 (threads), allreduce and allgather on the grown communicator"


def rank_main(r, parent_uid, ids, torch, errors):
    try:
        ndev = torch.cuda.device_count()
        torch.cuda.set_device(r % ndev)
        if r < 2:
            parent = nc.Communicator.init(2, r, parent_uid)
            if r == 0:
                uid = parent.get_unique_id()  # the coordinator hands it to the new rank
                ids.put(uid)
                new = parent.grow(3, uid)
            else:
                new = parent.grow(3)
        else:
            parent, new = None, nc.Communicator().grow(3, ids.get(timeout=60), rank=2)
        if (new.nranks, new.rank) != (3, r):
            raise AssertionError(f"grown communicator is rank {new.rank} of {new.nranks}")
        s = torch.cuda.Stream()
        x = torch.full((1024,), float(r + 1), device="cuda")
        g = torch.zeros(3 * 4, device="cuda")
        new.allreduce(x, x, nc.SUM, stream=s)
        new.allgather(torch.full((4,), float(r), device="cuda"), g, stream=s)
        s.synchronize()
        if not torch.equal(x, torch.full_like(x, 6.0)):
            raise AssertionError(f"rank {r}: allreduce gave {x[:4].tolist()}")
        if g.tolist() != [float(q) for q in range(3) for _ in range(4)]:
            raise AssertionError(f"rank {r}: allgather gave {g.tolist()}")
        if parent is not None:  # the parent still works
            y = torch.full((8,), float(r + 1), device="cuda")
            parent.allreduce(y, y, nc.SUM, stream=s)
            s.synchronize()
            if not torch.equal(y, torch.full_like(y, 3.0)):
                raise AssertionError(f"rank {r}: parent allreduce gave {y[:4].tolist()}")
            parent.destroy()
        new.destroy()
    except Exception as exc:  # noqa: BLE001 - reported below
        errors.append(f"rank {r}: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")


def main():
    try:
        import torch
    except ImportError:
        print(f"SKIP  {NAME} (no torch)")
        return 0
    if low.get_version() < 22902:
        print(f"SKIP  {NAME} (NCCL {low.get_version()} has no ncclCommGrow)")
        return 0
    parent_uid, ids, errors = nc.get_unique_id(), queue.Queue(), []
    threads = [threading.Thread(target=rank_main, args=(r, parent_uid, ids, torch, errors), daemon=True)
               for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(100)
    if any(t.is_alive() for t in threads):
        errors.append("a rank did not finish within 100 s")
    print(f"{'FAIL' if errors else 'PASS'}  {NAME}")
    for e in errors:
        print("      " + e.replace("\n", "\n      "))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
