"""The Python stacks beside a SIGUSR1 dump (docs/api/trace.md#python-stacks), the verdict's use of
them, and calls that wait longer than NCCL4PY_WAIT_WARNING (docs/api/trace.md#calls-that-wait):
the rank's own line outside nccl.run, and nccl.trace._waits on files made by hand (synth.py)."""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import children
import nccl.trace
import synth
from nccl.trace import _stacks
from nccl.trace._files import load
from nccl.trace._waits import waits
from synth import CID, op

pytest.importorskip("numpy")


def child_env(tmp_path, **extra):
    return children.environment(**{"NCCL_LIBRARY": "host", "NCCL4PY_TRACE_DIR": str(tmp_path), "RANK": None,
                                   "WORLD_SIZE": None, "NCCL4PY_UNIQUE_ID": None, "NCCL4PY_LAUNCHER": None,
                                   "NCCL4PY_TRACE_BUFFER": None, "NCCL4PY_TRACE_JOB": None,
                                   "NCCL4PY_WAIT_WARNING": None, **extra})


def test_current_stacks_name_every_thread_but_the_callers_main_first():
    released, taken = threading.Event(), []

    def taker():  # as the recorder's stack thread does, from a thread of its own
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            threads = _stacks.current()
            if any(f["func"] == "parked_here" for f in threads[0]["frames"]):
                taken.append(threads)
                break
            time.sleep(0.01)
        released.set()

    def parked_here():
        released.wait(60)

    t = threading.Thread(target=taker, name="taker")
    t.start()
    parked_here()
    t.join(30)
    (threads,) = taken
    assert threads[0]["main"] and threads[0]["name"] == "MainThread"
    funcs = [f["func"] for f in threads[0]["frames"]]
    assert funcs[funcs.index("test_current_stacks_name_every_thread_but_the_callers_main_first") + 1] == "parked_here"
    assert "taker" not in [x["name"] for x in threads]
    assert _stacks.path_of("/a/rank3.jsonl") == "/a/rank3.stack.json"


@pytest.mark.timeout(120)
def test_a_signal_dump_comes_with_the_python_stacks(tmp_path):
    code = textwrap.dedent("""
        import os, signal, threading, time
        import numpy as np
        import nccl.core as nc
        c = nc.Communicator.init(1, 0, nc.get_unique_id())
        x = np.ones(4, np.float32)
        c.allreduce(x, x, nc.SUM)
        threading.Thread(target=lambda: time.sleep(60), name="sleeper", daemon=True).start()

        def waiting_here():
            os.kill(os.getpid(), signal.SIGUSR1)
            while not os.path.exists("rank0.stack.json"):
                time.sleep(0.05)  # the line the stack shows

        waiting_here()
        c.destroy()
    """)
    children.run_python(code, env=child_env(tmp_path), cwd=str(tmp_path), timeout=60, check_exit=True)
    doc = json.loads((tmp_path / "rank0.stack.json").read_text())
    dump = json.loads((tmp_path / "rank0.jsonl").read_text().splitlines()[0])
    assert (doc["format"], doc["version"], dump["reason"], doc["pid"]) == ("nccl4py-stacks", 1, "signal", dump["pid"])
    main = doc["threads"][0]
    assert main["main"] and main["frames"][-1]["func"] == "waiting_here"
    assert main["frames"][-1]["line"] == code.splitlines().index(
        "        time.sleep(0.05)  # the line the stack shows") + 1
    assert [f["func"] for f in main["frames"]] == ["<module>", "waiting_here"]
    assert [t["name"] for t in doc["threads"]].count("sleeper") == 1
    # the verdict reads them with the dump
    (d,) = load(tmp_path).dumps
    assert d.stacks == doc["threads"]


@pytest.mark.timeout(120)
def test_dump_trace_and_errors_write_no_stacks(tmp_path):
    code = """
        import numpy as np
        import nccl.core as nc
        c = nc.Communicator.init(1, 0, nc.get_unique_id())
        print(nc.dump_trace())
        c.destroy()
    """
    children.run_python(code, env=child_env(tmp_path), cwd=str(tmp_path), timeout=60, check_exit=True)
    assert sorted(os.listdir(tmp_path)) == ["rank0.jsonl"]


WAITER = """
import os, sys, time
import numpy as np
import nccl.core as nc
comm = nc.Communicator.from_env()
x = np.ones(8, np.float32)
if comm.rank == 1:
    time.sleep(4)  # rank 0 waits for this one in the allreduce below
comm.allreduce(x, x, nc.SUM)  # the waiting call
comm.destroy()
"""


# Starts two ranks of waiter.py as a launcher would, but without NCCL4PY_LAUNCHER (this process
# holds the id's bootstrap root, so it outlives them), and reports their exits and output.
TWO_RANKS = """
import json, os, subprocess, sys
import nccl.core as nc
uid = nc.get_unique_id().as_bytes.hex()
procs = [subprocess.Popen([sys.executable, "waiter.py"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", NCCL4PY_UNIQUE_ID=uid))
         for r in (0, 1)]
outs = [p.communicate(timeout=90) for p in procs]
print(json.dumps([[p.returncode, *o] for p, o in zip(procs, outs)]))
"""


@pytest.mark.timeout(120)
def test_a_rank_outside_nccl_run_says_it_waits(tmp_path):
    """NCCL4PY_WAIT_WARNING without the launcher: the rank writes a "wait" dump and says so on
    stderr, once; a call that returns in time says nothing."""
    (tmp_path / "waiter.py").write_text(WAITER)
    ranks = children.last_json(children.run_python(
        TWO_RANKS, env=child_env(tmp_path, NCCL4PY_WAIT_WARNING=1, NCCL4PY_TRACE_JOB="w"), cwd=str(tmp_path),
        timeout=100))
    assert [r[0] for r in ranks] == [0, 0], ranks
    line = WAITER.splitlines().index("comm.allreduce(x, x, nc.SUM)  # the waiting call") + 1
    said = [ln for ln in ranks[0][2].splitlines() if ln.startswith("nccl4py: ")]
    assert len(said) == 1, ranks[0][2]
    assert said[0].startswith("nccl4py: rank 0 of comm ")
    assert f" still waiting in AllReduce (seq 2) at {tmp_path / 'waiter.py'}:{line} after " in said[0]
    assert said[0].endswith(f" s; its dump: {tmp_path / 'rank0.jsonl'}")
    assert ranks[1][2] == ""  # rank 1 did not wait
    dump = json.loads((tmp_path / "rank0.jsonl").read_text().splitlines()[0])
    assert dump["reason"] == "wait"


# ---- nccl.trace._waits and the verdict, on files made by hand ----

def stack_file(folder, rank, frames, wall=None):
    doc = {"format": "nccl4py-stacks", "version": 1, "pid": 1000 + rank,
           "wall": synth.T0_WALL + 100.0 if wall is None else wall,
           "threads": [{"id": 1, "name": "MainThread", "main": True,
                        "frames": [{"file": f, "line": n, "func": fn, "code": code} for f, n, fn, code in frames]},
                       {"id": 2, "name": "loader", "main": False, "frames": []}]}
    (folder / f"rank{rank}.stack.json").write_text(json.dumps(doc))


SLEEPING = [("train.py", 120, "<module>", "main()"), ("train.py", 60, "main", "batch = load(i)"),
            ("data.py", 7, "load", "time.sleep(5)")]


def behind(rank, ops, who=1, n=20):
    """Rank `who` stops after n - 1 entries; the others are inside the n-th, an AllReduce."""
    if rank == who:
        return ops[:-1]
    ops[-1] = op(CID, n, n, "AllReduce", took=None, at=50.0)
    return ops


def test_a_collective_that_waits_names_the_ranks_it_waits_for_and_where_they_are(tmp_path):
    synth.job(tmp_path, 4, plant=behind)
    stack_file(tmp_path, 1, SLEEPING)
    found = waits(load(tmp_path), 30.0)
    assert len(found) == 1
    assert found[0].key == ("coll", CID, 20) and found[0].ranks == [1]
    assert found[0].text == ("ranks 0,2,3 still waiting in AllReduce(count=1024, float32, sum) (seq 20) at "
                             "train.py:88 for 50.0 s, for rank 1; rank 1 is at data.py:7 in load (time.sleep(5)), "
                             "called from train.py:60 in main, from train.py:120 in <module>")
    assert waits(load(tmp_path), 60.0) == []  # not yet that long
    # the verdict says the same of rank 1
    v = nccl.trace.analyze(tmp_path).verdict
    assert v.endswith("Rank 1's last call on it: AllReduce(count=1024, float32, sum) at train.py:88 (seq 19), "
                      "returned after 1.0 ms; 99.8 s before its dump; at its dump its main thread was at data.py:7 "
                      "in load (time.sleep(5)), called from train.py:60 in main, from train.py:120 in <module>")


def test_without_a_stack_the_verdict_says_so(tmp_path):
    synth.job(tmp_path, 2, plant=behind)
    assert nccl.trace.analyze(tmp_path).verdict.endswith(
        "99.8 s before its dump, so since then it has been outside nccl4py on this communicator (its Python stack "
        "was not recorded: no SIGUSR1 dump, or its GIL was never released)")
    stack_file(tmp_path, 1, SLEEPING, wall=synth.T0_WALL + 90.0)  # taken 10 s before the dump
    assert "; 10.0 s before its dump its main thread was at data.py:7 in load" in nccl.trace.analyze(tmp_path).verdict
    (tmp_path / "rank1.stack.json").write_text('{"format": "nccl4py-stacks", "version": 2}')
    r = nccl.trace.analyze(tmp_path)
    assert "note: rank1.stack.json is not a stack file of version 1; it is left out" in r.text()


def test_every_rank_inside_the_same_call(tmp_path):
    synth.job(tmp_path, 3, plant=lambda r, ops: behind(r, ops, who=None))
    (w,) = waits(load(tmp_path), 30.0)
    assert w.ranks == [] and w.text == (
        f"ranks 0-2 still waiting in AllReduce(count=1024, float32, sum) (seq 20) at train.py:88 for 50.0 s; every "
        f"rank of comm {CID} (3 ranks) is inside it: the wait is in the library or below it (the devices, the "
        f"network, another communicator these ranks also wait on)")


def test_a_receive_that_waits_names_its_peer_and_a_group_its_collective(tmp_path):
    def plant(rank, ops):
        if rank == 0:  # a Recv from rank 1, which is inside a Broadcast on another communicator
            ops.append(op(CID, 20, 19, "Recv", peer=1, redop=None, took=None, at=40.0))
        return ops

    synth.job(tmp_path, 2, n=19, plant=plant)
    other = "0123456789abcdef"
    path = tmp_path / "rank1.jsonl"
    lines = path.read_text().splitlines()
    extra = [op(other, 1, 1, "Broadcast", root=0, redop=None, took=None, at=45.0, line=30)]
    lines.insert(2, json.dumps(synth.comm(other, 1, 2, extra)))
    path.write_text("\n".join(lines + [json.dumps(e) for e in extra]) + "\n")
    recv, bcast = waits(load(tmp_path), 30.0)
    assert recv.text == ("rank 0 still waiting in Recv from rank 1 (count=1024, float32) (seq 20) at train.py:88 for "
                         "60.0 s, for rank 1; rank 1 is inside Broadcast(root=0, count=1024, float32) on comm "
                         f"{other} at train.py:30 (seq 1)")
    # and rank 1 waits in its broadcast for rank 0, which never made that communicator: a deadlock
    assert bcast.text == ("rank 1 still waiting in Broadcast(root=0, count=1024, float32) (seq 1) at train.py:30 for "
                          "55.0 s, for rank 0; rank 0 is inside Recv from communicator rank 1 (count=1024, float32) "
                          f"on comm {CID} at train.py:88 (seq 20)")

    def grouped(rank, ops):  # rank 1 never reaches the group's allreduce
        if rank == 1:
            return ops[:-1]
        ops[-1:] = [op(CID, 19, 18, "GroupStart", group=3, count=None, dtype=None, redop=None, at=39.0),
                    op(CID, 20, 19, "AllReduce", group=3, at=39.5),
                    op(CID, 21, 19, "GroupEnd", group=3, count=None, dtype=None, redop=None, took=None, at=40.0,
                       line=95)]
        return ops

    for p in tmp_path.iterdir():
        p.unlink()
    synth.job(tmp_path, 2, n=19, plant=grouped)
    (w,) = waits(load(tmp_path), 30.0)
    assert w.key == ("coll", CID, 19) and w.ranks == [1]
    assert w.text.startswith("rank 0 still waiting in GroupEnd of AllReduce(count=1024, float32, sum) (seq 21) at "
                             "train.py:95 for 60.0 s, for rank 1; rank 1 is outside nccl4py")
