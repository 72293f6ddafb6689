"""One rank of tests/torch/test_training.py: a few steps of training a small model on CPU with
DDP or FSDP2 (fully_shard) over the backend named on the command line; reports the final
parameters (FSDP2: this rank's shards gathered into full tensors) and the losses.

    python -m nccl.run -n 2 tests/torch/rank_train.py ddp nccl4py
"""

import sys

import torch
import torch.distributed as dist

import nccl.torch  # noqa: F401 - registers the backend
from launch import init_method, report

STEPS = 5


def model():
    torch.manual_seed(0)  # the same initial parameters on every rank and for every backend
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.LayerNorm(32),
                               torch.nn.Linear(32, 4))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)


def main():
    kind, backend = sys.argv[1], sys.argv[2]
    dist.init_process_group(backend, **init_method())
    rank = dist.get_rank()
    net = model()
    if kind == "ddp":
        net = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.001)  # several buckets
    else:
        from torch.distributed.fsdp import fully_shard

        for layer in (net[0], net[3]):
            fully_shard(layer)
        fully_shard(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(STEPS):
        x, y = batch(rank, step)
        loss = torch.nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = {}
    for name, p in net.named_parameters():
        full = p.full_tensor() if hasattr(p, "full_tensor") else p.detach()
        params[name] = full.detach().reshape(-1).tolist()
    report({"params": params, "losses": losses})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
