"""Kill trials on the host backend: one rank of a 3- or 4-rank job is killed with SIGKILL at a
random moment, and every survivor must name it as the first cause of its error
(docs/host-backend.md#peer-death-and-abort), whatever the others did after their own failure
(abort, destroy, or end without leaving).

Starting Python rank processes costs most of a second each, so one harness rank (init=False)
acts as a launcher: it imports everything once, then for each trial makes a unique id (its
bootstrap root serves it) and forks the trial's ranks, which create their communicator, run the
workload, and report over a pipe. The ranks are real processes with their own communicator and
segment; only their start is cheaper."""

import json
import os
import re
import select
import signal
import threading
import time

import numpy as np

import nccl._ext as E
import nccl.bindings.nccl as b
import nccl.core as core
from nccl.core import WaitSignalDesc

LOOP_LIMIT_S = 20.0  # a survivor that never fails stops here (and the trial fails)
TRIAL_LIMIT_S = 40.0  # the launcher kills what is left of a trial after this

# A first cause as the library words it: "rank 2 (pid 4711) died" or "rank 2 (pid 4711), which
# died", not followed by " after" (a rank that died after failing for another's loss).
FIRST_DEATH = re.compile(r"rank (\d+) \(pid (\d+)\)(?:, which)? died(?! after)")


def _report(fd, doc):
    os.write(fd, (json.dumps(doc) + "\n").encode())  # < PIPE_BUF: one atomic write


def _workload(c, op, rank, n):
    """The step each rank repeats: a put/wait ring, an AllReduce, or a send/recv ring."""
    if op == "ring":
        buf = core.mem_alloc(4096)
        win = c.register_window(buf)
        src = np.arange(8, dtype=np.float64)

        def step():
            c.put_signal(src, (rank + 1) % n, win, 0)
            c.wait_signal(WaitSignalDesc((rank - 1) % n))
        return step, (win, buf)
    x, y = np.ones(256, np.float32), np.zeros(256, np.float32)
    if op == "allreduce":
        return (lambda: c.allreduce(x, y, b.RedOp.Sum)), ()

    def sendrecv():
        with core.group():
            c.send(x, (rank + 1) % n)
            c.recv(y, (rank - 1) % n)
    return sendrecv, ()


def _trial_rank(fd, uid, n, rank, trial):
    """One rank of a trial, in a forked child: never returns (os._exit)."""
    doc = {"rank": rank, "pid": os.getpid()}
    try:
        box = b.PointerBox()
        b.comm_init_rank(box.address, n, uid, rank)
        c = E.Communicator(box.ptr)
        step, keep = _workload(c, trial["op"], rank, n)
        c.allreduce(np.zeros(1), np.zeros(1), b.RedOp.Sum)  # everyone is in the loop's first step
        if rank == trial["victim"]:
            def die():
                _report(fd, dict(doc, killed_at=time.monotonic()))
                os.kill(os.getpid(), signal.SIGKILL)
            threading.Timer(trial["delay"], die).start()
        start, steps = time.monotonic(), 0
        try:
            while time.monotonic() - start < LOOP_LIMIT_S:
                step()
                steps += 1
            doc["error"] = None
        except b.NCCLError as exc:
            doc.update(at=time.monotonic(), error=type(exc).__name__, text=exc.last_error or str(exc))
        doc["steps"] = steps
        _report(fd, doc)
        leave = trial["leave"][rank]
        if leave == "abort":
            c.abort()
        elif leave == "destroy":
            c.destroy()
        del keep  # "exit": the process ends with its communicator (and window) still open
    except BaseException as exc:  # noqa: BLE001 - reported to the launcher
        _report(fd, dict(doc, crash=f"{type(exc).__name__}: {exc}"))
    os._exit(0)


def _collect(rfd, pids, deadline):
    """The trial's reports, once every rank closed its end of the pipe or the deadline passed;
    stragglers are killed, every child reaped. Returns (reports, number killed by us)."""
    data, killed = b"", 0
    while time.monotonic() < deadline:
        ready, _, _ = select.select([rfd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        data += chunk
    # an end of file comes as the last rank closes its files, a moment before it can be reaped
    reap_by = max(deadline, time.monotonic() + 5.0)
    for pid in pids:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= reap_by:
                killed += 1
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.001)
    os.close(rfd)
    return [json.loads(line) for line in data.decode().splitlines() if line], killed


def _judge(trial, reports, victim_pid):
    """What is wrong with one trial's outcome (empty: every survivor named the victim)."""
    wrong = []
    got = {r["rank"]: r for r in reports if "killed_at" not in r}
    killed = [r["killed_at"] for r in reports if "killed_at" in r]
    for rank in range(trial["n"]):
        if rank == trial["victim"]:
            continue
        r = got.get(rank)
        if r is None or "crash" in r or r.get("error") is None:
            wrong.append(f"rank {rank}: {r}")
            continue
        named = set(FIRST_DEATH.findall(r["text"]))
        if named != {(str(trial["victim"]), str(victim_pid))} or "died, aborted or left" in r["text"]:
            wrong.append(f"rank {rank} blames {sorted(named)}: {r['text']}")
    if not killed:
        wrong.append("the victim did not report its kill")
    return wrong


def kill_trials(ctx):
    """ctx.params: {"trials": [{"op", "n", "victim", "delay", "leave": [per rank]}]}. Returns
    every trial's verdict, every survivor's error text ([trial, victim, rank, text]), the
    latencies from kill to error (ms) and how many ranks had to be killed by the launcher."""
    out = {"failures": [], "latency_ms": [], "stragglers": 0, "trials": 0, "texts": []}
    for i, trial in enumerate(ctx.params["trials"]):
        uid = b.get_unique_id()
        rfd, wfd = os.pipe()
        pids = []
        for rank in range(trial["n"]):
            pid = os.fork()
            if pid == 0:
                os.close(rfd)
                _trial_rank(wfd, uid, trial["n"], rank, trial)
            pids.append(pid)
        os.close(wfd)
        reports, killed = _collect(rfd, pids, time.monotonic() + TRIAL_LIMIT_S)
        out["stragglers"] += killed
        out["trials"] += 1
        wrong = _judge(trial, reports, pids[trial["victim"]])
        out["failures"] += [f"trial {i} {trial}: {w}" for w in wrong]
        out["texts"] += [[i, trial["victim"], r["rank"], r.get("text")] for r in reports if "killed_at" not in r]
        at = [r["killed_at"] for r in reports if "killed_at" in r]
        if at:
            out["latency_ms"] += [round((r["at"] - at[0]) * 1e3, 2) for r in reports if r.get("at") is not None]
    return out
