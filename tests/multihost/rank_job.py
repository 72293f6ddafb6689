"""One process of a multi-host job (tests/multihost): runs a list of launches in order, each a
Communicator.from_env over the given launcher variables followed by an allreduce checked against
its known sum, and prints one JSON line per launch.

argv[1] is a JSON file: {"launches": [{"name": ..., "environ": {...} or null, "timeout": s,
"window": bool}, ...]}. A launch whose environ is null is one this process takes no part in. With
"window", the launch also registers an ncclMemAlloc window, puts a value into every rank's part
of it, and loads each peer's part through its mapped peer pointer (the blocks' descriptors pass
between the nodes as the segment's do). The library's own variables
(NCCL_LIBRARY, NCCL_HOST_*, NCCL_SOCKET_IFNAME) come from the process environment, read once when
the library loads; the launcher's come from the launch, as ``from_env(environ=...)`` reads them.

mpi4py is made unimportable: these processes stand for an MPI launch without mpi4py, whose id
channel is MASTER_ADDR/MASTER_PORT (docs/api/several-machines.md).
"""

import ctypes
import json
import socket
import sys
import time

sys.modules["mpi4py"] = None  # import mpi4py raises ImportError

import numpy as np  # noqa: E402

import nccl.bindings.nccl as bindings  # noqa: E402
import nccl.core as nccl  # noqa: E402
from nccl.core import _env  # noqa: E402

COUNT = 1024


def window_round(comm):
    """Puts 100 + rank into element `rank` of every rank's window; True when this rank's window
    holds every rank's value and every peer's part is mapped here and holds the same."""
    n, me = comm.nranks, comm.rank
    buf = nccl.mem_alloc(n * 8)
    arr = np.from_dlpack(buf).view(np.float64)
    arr[:] = -1
    win = comm.register_window(buf)
    try:
        for p in range(n):
            comm.put_signal(np.full(1, 100.0 + me), p, win, me)
        comm.wait_signal([nccl.WaitSignalDesc(p) for p in range(n)])
        want = [100.0 + r for r in range(n)]
        ok = arr.tolist() == want
        comm.allreduce(np.zeros(1), np.zeros(1), nccl.SUM)  # every rank's puts have landed everywhere
        for p in range(n):
            ptr = bindings.get_peer_device_pointer(win.handle, 0, p)
            ok = ok and ptr != 0 and np.frombuffer((ctypes.c_char * (n * 8)).from_address(ptr)).tolist() == want
        comm.allreduce(np.zeros(1), np.zeros(1), nccl.SUM)  # every rank has read before the windows go
    finally:
        win.close()
        nccl.mem_free(buf)
    return ok


def launch(spec):
    env = spec["environ"]
    record = {"name": spec["name"], "host": socket.gethostname()}
    if env is None:
        return dict(record, skipped=True)
    start = time.monotonic()
    try:
        info = _env.detect(env)
        record.update(kind=info.kind, source=info.source, local_rank=_env.local_rank(env))
        comm = nccl.Communicator.from_env(environ=env, timeout=spec["timeout"])
        try:
            n = comm.nranks
            x = np.full(COUNT, comm.rank + 1, dtype=np.float32)
            y = np.zeros_like(x)
            comm.allreduce(x, y, nccl.SUM)
            record.update(rank=comm.rank, nranks=n, ok=bool((y == n * (n + 1) / 2).all()))
            if spec.get("window"):
                record["window_ok"] = window_round(comm)
        finally:
            comm.destroy()
    except Exception as exc:  # noqa: BLE001 - the test judges it
        record["error"] = f"{type(exc).__name__}: {exc}"
    record["seconds"] = round(time.monotonic() - start, 2)
    return record


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)
    for spec in job["launches"]:
        print(json.dumps(launch(spec)), flush=True)


if __name__ == "__main__":
    main()
