"""Calls that have waited too long (docs/api/launcher.md#a-rank-that-waits): from one job's dumps,
each call that a rank has been inside for at least a given time, the ranks inside it together,
the ranks it waits for, and where each of those is (inside another call, or its Python stack).
``python -m nccl.run`` prints one line per such call (NCCL4PY_WAIT_WARNING)."""

from __future__ import annotations

from dataclasses import dataclass

from nccl.trace import _calls as C
from nccl.trace._files import Folder
from nccl.trace._verdict import Group, _at, _seq_text, groups_of, ranks_text

_GROUPED = ("GroupStart", "GroupEnd")


@dataclass
class Wait:
    """One call that has waited too long: `key` says which (the same on every rank of a
    collective call), `text` says it in words."""

    key: tuple
    text: str
    ranks: list[int]  # the ranks it waits for


def waits(folder: Folder, seconds: float) -> list[Wait]:
    """Every call some rank has been inside for `seconds` or more at its dump, once each."""
    found: dict[tuple, Wait] = {}
    for g in groups_of(folder):
        for r, c in sorted(g.members.items()):
            e = c.ops[-1] if c.ops else None
            if e is None or C.returned(e) or g.now[r] - e["m_enter"] < seconds:
                continue
            w = _wait(folder, g, r, e)
            found.setdefault(w.key, w)
    return list(found.values())


def _whereabouts(folder: Folder, rank: int, skip: str) -> str:
    """Where a rank that a call waits for is: inside a call on another communicator, else its
    main thread's Python stack at its dump."""
    d = folder.dump_of(rank)
    if d is None:
        return f"rank {rank} wrote no dump"
    inside = [(e, c) for c in d.comms.values() if c.id != skip for e in c.ops if not C.returned(e)]
    if inside:
        e, c = max(inside, key=lambda ec: ec[0]["m_enter"])
        return f"rank {rank} is inside {C.call(e)} on comm {c.id} {_at({rank: e})} (seq {e['seq']})"
    if d.stacks is not None:
        return f"rank {rank} is at {C.main_stack(d.stacks)}"
    return f"rank {rank} is outside nccl4py (its Python stack was not recorded)"


def _in_group(g: Group, rank: int, e: dict) -> list[dict]:
    """The calls of the group a GroupEnd ends, on this communicator."""
    return [x for x in g.members[rank].ops if x.get("group") == e.get("group") and x["op"] not in _GROUPED
            and x["seq"] < e["seq"]]


def _wait(folder: Folder, g: Group, rank: int, e: dict) -> Wait:
    call = C.call(e, g.job_rank)
    calls = _in_group(g, rank, e) if e["op"] == "GroupEnd" else [e]
    if e["op"] == "GroupEnd" and calls:
        call = "GroupEnd of " + ", ".join(dict.fromkeys(C.call(x, g.job_rank) for x in calls))
    colls = [x for x in calls if C.is_collective(x)]
    if colls:
        return _collective(folder, g, colls[-1]["coll"], call)
    waited = C.seconds(g.now[rank] - e["m_enter"])
    head = f"rank {rank} still waiting in {call} (seq {e['seq']}) {_at({rank: e})} for {waited}"
    peers = sorted({p for p in (g.job_rank(x["peer"]) for x in calls if x.get("peer") is not None) if p is not None})
    if not peers:
        return Wait(("call", g.id, rank, e["seq"]), head, [])
    text = f"{head}, for {ranks_text(peers)}; " + "; ".join(_whereabouts(folder, p, g.id) for p in peers[:3])
    return Wait(("p2p", g.id, rank, e["seq"]), text, peers)


def _pending(ops: list[dict], x: dict) -> dict | None:
    """The entry by which call x is still waiting: x itself, or, for a call in a group (which
    returns once queued), the group's GroupEnd; None once it returned."""
    if x.get("group") is None:
        return None if C.returned(x) else x
    end = [y for y in ops if y["op"] == "GroupEnd" and y.get("group") == x["group"] and y["seq"] > x["seq"]]
    return None if end and C.returned(end[0]) else end[0] if end else x


def _collective(folder: Folder, g: Group, k: int, call: str) -> Wait:
    """The k-th collective call of g: the ranks inside it, and the ranks that have not reached it."""
    inside, missing = {}, []
    for r, c in sorted(g.members.items()):
        at_k = [x for x in c.ops if x["coll"] == k and C.is_collective(x)]
        waiting = _pending(c.ops, at_k[-1]) if at_k else None
        if waiting is not None:
            inside[r] = waiting
        elif not at_k and max((x["coll"] for x in c.ops), default=0) < k:
            missing.append(r)
    if g.nranks is not None and g.nranks == folder.world_size:  # the whole job: the others wrote no dump of it
        missing += [r for r in range(g.nranks) if r not in g.members]
    seq, _ = _seq_text(inside)
    waited = C.seconds(max(g.now[r] - x["m_enter"] for r, x in inside.items()))
    head = f"{ranks_text(inside)} still waiting in {call} ({seq}) {_at(inside)} for {waited}"
    if not missing:
        if g.nranks is not None and len(inside) >= g.nranks:
            head += (f"; every rank of {g.label()} is inside it: the wait is in the library or below it (the "
                     f"devices, the network, another communicator these ranks also wait on)")
        return Wait(("coll", g.id, k), head, [])
    text = f"{head}, for {ranks_text(sorted(missing))}; " + "; ".join(
        _whereabouts(folder, r, g.id) for r in sorted(missing)[:3])
    if len(missing) > 3:
        text += f"; ({len(missing) - 3} more)"
    return Wait(("coll", g.id, k), text, sorted(missing))
