"""One-sided put_signal + wait_signal against a send/recv pair of the same size, at 2 ranks, on the
host backend (docs/host-backend.md#windows-and-one-sided-operations). Not a test.

    python -m nccl.run -n 2 benchmarks/host_rma.py                    # 8 B and 4 KiB - 64 MiB
    python -m nccl.run -n 2 benchmarks/host_rma.py --sizes 8,64K --time 0.2

One round trip per iteration, both forms on the same communicator and buffers: rank 0 moves
`size` bytes to rank 1 and rank 1 answers with 8 bytes (a put_signal into rank 0's window, or a
send), so a round trip is one message each way and neither side can run ahead. put_signal writes
straight into the peer's mapped window (one copy); send/recv goes through the shared segment (two
copies) or, from NCCL_HOST_DIRECT_MIN bytes where the single-copy path is on, one kernel copy.
Cells alternate between the two forms, --runs times; the table shows the median time per round
trip and the ratio put/sendrecv (below 1: the put is cheaper)."""

import argparse
import statistics
import time

import numpy as np

import nccl.core as nc


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,4K,64K,1M,16M,64M", help="message sizes, comma-separated (K/M suffixes)")
    ap.add_argument("--time", type=float, default=0.3, help="seconds per cell and form (default 0.3)")
    ap.add_argument("--runs", type=int, default=3, help="alternations of the two forms per size (default 3)")
    args = ap.parse_args()
    comm = nc.Communicator.from_env()
    me, peer = comm.rank, 1 - comm.rank
    if comm.nranks != 2:
        raise SystemExit("run it with 2 ranks: python -m nccl.run -n 2 benchmarks/host_rma.py")
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    top = max(sizes)
    wbuf = nc.mem_alloc(top)
    win_arr = np.from_dlpack(wbuf).view(np.uint8)
    win = comm.register_window(wbuf)
    src = np.ones(top, np.uint8)
    dst = np.zeros(top, np.uint8)
    ack = np.ones(8, np.uint8)
    wait = nc.WaitSignalDesc(peer)

    def put_round(n):
        if me == 0:
            comm.put_signal(src[:n], peer, win, 0)
            comm.wait_signal(wait)
        else:
            comm.wait_signal(wait)
            comm.put_signal(ack, peer, win, 0)

    def sendrecv_round(n):
        if me == 0:
            comm.send(src[:n], peer)
            comm.recv(ack, peer)
        else:
            comm.recv(dst[:n], peer)
            comm.send(ack, peer)

    def timed(fn, n):
        """Seconds per round trip: calibrate on rank 0, agree on the iteration count, time it."""
        fn(n)
        t0 = time.perf_counter()
        fn(n)
        one = np.array([time.perf_counter() - t0])
        comm.allreduce(one, one, nc.MAX)
        iters = np.array([max(2, int(args.time / max(one[0], 1e-7)))], np.int64)
        comm.broadcast(iters, iters, root=0)
        comm.allreduce(np.zeros(1), np.zeros(1), nc.SUM)
        t0 = time.perf_counter()
        for _ in range(int(iters[0])):
            fn(n)
        t = np.array([(time.perf_counter() - t0) / int(iters[0])])
        comm.allreduce(t, t, nc.MAX)
        return float(t[0])

    if me == 0:
        print(f"{'size':>10} {'put_signal+wait us':>20} {'send/recv us':>14} {'put/sendrecv':>13}")
    for n in sizes:
        put, sr = [], []
        for _ in range(args.runs):
            put.append(timed(put_round, n))
            sr.append(timed(sendrecv_round, n))
        if me == 0:
            p, s = statistics.median(put), statistics.median(sr)
            print(f"{n:>10} {p * 1e6:>20.1f} {s * 1e6:>14.1f} {p / s:>13.2f}", flush=True)
    if me == 1 and win_arr[0] != 1:
        raise SystemExit("the window did not receive the data")
    win.close()
    nc.mem_free(wbuf)
    comm.destroy()


if __name__ == "__main__":
    main()
