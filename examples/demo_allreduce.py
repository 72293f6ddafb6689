"""A 2-rank all_reduce through nccl.bindings.nccl, checked against numpy.

    python examples/demo_allreduce.py [--nranks N]

The parent creates the unique id and starts N rank processes with the id (hex) in their
environment; each rank initialises its communicator, all-reduces a float32 array filled with
rank + 1, and checks that every element equals 1 + 2 + ... + N. On a machine without a GPU the
bundled host backend runs it; on a GPU machine set NCCL_LIBRARY=host to run it on host memory (the
buffers here are numpy arrays in host memory).
"""

import argparse
import os
import subprocess
import sys

import numpy as np


def run_rank(rank, nranks, uid_hex):
    import nccl.bindings.nccl as b

    box = b.PointerBox()
    b.comm_init_rank(box.address, nranks, bytes.fromhex(uid_hex), rank)
    comm = box.ptr
    try:
        x = np.full(1 << 16, rank + 1, dtype=np.float32)
        y = np.empty_like(x)
        b.all_reduce(x.ctypes.data, y.ctypes.data, x.size, b.DataType.Float32, b.RedOp.Sum, comm, 0)
        expected = np.full_like(x, nranks * (nranks + 1) / 2)
        ok = np.array_equal(y, expected)
        print(f"rank {rank}/{nranks}: all_reduce of {x.size} float32 -> {y[0]:g} "
              f"({'correct' if ok else 'WRONG'})", flush=True)
        return 0 if ok else 1
    finally:
        b.comm_destroy(comm)


def main():
    ap = argparse.ArgumentParser(description="2-rank all_reduce demo")
    ap.add_argument("--nranks", type=int, default=2)
    args = ap.parse_args()
    if "DEMO_RANK" in os.environ:
        return run_rank(int(os.environ["DEMO_RANK"]), args.nranks, os.environ["DEMO_UNIQUE_ID"])

    import nccl.bindings.nccl as b

    uid = bytes(b.get_unique_id()).hex()  # the root of the id lives in this process until init ends
    print(f"library: {b.get_library_path()} ({b.get_library_flavour()})", flush=True)
    # The ranks open the very library this process chose (and skip its one-time notice).
    env_base = dict(os.environ, DEMO_UNIQUE_ID=uid, NCCL_LIBRARY=b.get_library_path())
    procs = [subprocess.Popen([sys.executable, __file__, "--nranks", str(args.nranks)],
                              env=dict(env_base, DEMO_RANK=str(r))) for r in range(args.nranks)]
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=120))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(124)
    failed = [r for r, c in enumerate(codes) if c != 0]
    if failed:
        print(f"demo FAILED on rank(s) {failed}", file=sys.stderr)
        return 1
    print("demo passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
