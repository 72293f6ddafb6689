"""Flight-recorder files made by hand for the verdict's tests: the lines of docs/api/trace.md's
format version 1 (written here from the documented fields, independently of the recorder), so a
test can plant exactly the fault or the damage it needs."""

import json
from pathlib import Path

T0_WALL, T0_MONO = 1_764_946_800.0, 80_000.0


def header(rank, world, job="job-s", reason="signal", version=1, monotonic=None, **extra):
    h = {"format": "nccl4py-trace", "version": version, "job": job, "rank": rank, "world_size": world,
         "pid": 1000 + (rank or 0), "host": "node0", "reason": reason, "error": None, "wall": T0_WALL + 100.0,
         "monotonic": monotonic if monotonic is not None else T0_MONO + 100.0, "buffer": 2000,
         "library": "/usr/lib/libnccl.so.2"}
    h.update(extra)
    return h


def comm(cid, rank, nranks, ops, origin="init", parent=None, color=None, dropped=0):
    recorded = (ops[-1]["seq"] if ops else 0)
    return {"type": "comm", "comm": cid, "rank": rank, "nranks": nranks, "parent": parent, "color": color,
            "key": None, "origin": origin, "recorded": recorded, "dropped": dropped}


def op(cid, seq, coll, name, *, count=1024, dtype="float32", redop="sum", root=None, peer=None, group=None,
       file="train.py", line=88, at=None, took=0.001, rc=0):
    m_enter = T0_MONO + (at if at is not None else seq * 0.01)
    returned = took is not None
    return {"type": "op", "comm": cid, "seq": seq, "coll": coll, "op": name, "count": count, "dtype": dtype,
            "redop": redop, "root": root, "peer": peer, "group": group, "stream": 0, "sendbuff": 4096,
            "recvbuff": 8192, "file": file, "line": line, "func": "step", "t_enter": m_enter + T0_WALL - T0_MONO,
            "m_enter": m_enter, "m_return": m_enter + took if returned else None, "rc": rc if returned else None}


def allreduces(cid, n, first_seq=1, first_coll=1):
    """An Init then n-1 AllReduce entries, numbered from first_seq / first_coll."""
    out = [op(cid, first_seq, first_coll, "Init", count=None, dtype=None, redop=None, line=10)]
    out += [op(cid, first_seq + i, first_coll + i, "AllReduce") for i in range(1, n)]
    return out


def write(folder, name, head, comms):
    """comms: list of (comm line, entries)."""
    lines = [head] + [c for c, _ in comms] + [e for _, ops in comms for e in ops]
    path = Path(folder) / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


CID = "9c1f04d2e7a35b80"


def job(folder, nranks, n=20, plant=None, job_id="job-s", cid=CID):
    """nranks files of n entries each on one communicator; plant(rank, ops) may change a rank's."""
    for r in range(nranks):
        ops = allreduces(cid, n)
        if plant:
            ops = plant(r, ops)
        write(folder, f"rank{r}.jsonl", header(r, nranks, job=job_id), [(comm(cid, r, nranks, ops), ops)])
