"""One rank of tests/torch/test_trace.py: calls through torch.distributed and DDP, then a
flight-recorder dump; reports the dump's path and the lines that made the calls."""

import inspect

import torch
import torch.distributed as dist

import nccl.core
from launch import report


def here():
    return inspect.currentframe().f_back.f_lineno


dist.init_process_group("nccl4py")
t = torch.ones(4)
lines = {"all_reduce": here() + 1}
dist.all_reduce(t)
lines["broadcast"] = here() + 1
dist.broadcast(t, 0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
loss = model(torch.ones(3, 4)).sum()
lines["backward"] = here() + 1
loss.backward()
report({"dump": nccl.core.dump_trace(), "file": __file__, "lines": lines})
dist.destroy_process_group()
