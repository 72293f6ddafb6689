"""The verdict (docs/api/trace.md#the-verdict): the ranks' rings lined up communicator by
communicator, and the first place where they part: a collective call that differs, one that some
ranks never reached, a send without its receive, a rank that died; else a hang that every rank is
in alike."""

from __future__ import annotations

from dataclasses import dataclass, field

from nccl.trace import _calls as C
from nccl.trace._files import Comm, Folder

_TEARDOWN = {"Destroy": "destroyed", "Abort": "aborted", "Finalize": "finalized"}


@dataclass
class Finding:
    """One thing the dumps show: `kind` is "mismatch", "not_reached", "p2p_mismatch",
    "p2p_unmatched", "died", "no_dump" or "hang"; `text` says it in words; `ranks` are the ranks it
    names as the cause; `when` (seconds since the epoch) orders findings."""

    kind: str
    text: str
    when: float
    ranks: list[int]
    comm: str | None = None
    coll: int | None = None
    seq: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"kind": self.kind, "text": self.text, "ranks": self.ranks, "comm": self.comm, "coll": self.coll,
                "seq": {str(r): s for r, s in sorted(self.seq.items())}}


@dataclass
class Group:
    """One communicator across the ranks that dumped it: job rank -> its Comm line and entries."""

    id: str
    members: dict[int, Comm]
    now: dict[int, float]  # job rank -> its dump's monotonic time
    tick: dict[int, float]  # job rank -> its dump's clock resolution (docs/api/trace.md#cost)

    @property
    def first(self) -> Comm:
        return next(iter(self.members.values()))

    @property
    def nranks(self) -> int | None:
        sizes = [c.nranks for c in self.members.values() if c.nranks is not None]
        return max(sizes) if sizes else None

    def label(self) -> str:
        c, n = self.first, self.nranks
        size = f"{n} ranks" if n is not None else "size unknown"
        if c.origin in ("split", "shrink", "grow") and c.parent:
            how = f", color {c.color}" if c.origin == "split" and c.color is not None else ""
            return f"comm {self.id} ({c.origin} of {c.parent}{how}; {size})"
        return f"comm {self.id} ({size})"

    def job_rank(self, comm_rank: int) -> int | None:
        for r, c in self.members.items():
            if c.rank == comm_rank:
                return r
        return None


def ranks_text(ranks) -> str:
    """"rank 2", "ranks 0,1,3", "ranks 0-7"."""
    rs = sorted(ranks)
    if len(rs) == 1:
        return f"rank {rs[0]}"
    parts, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(f"{rs[i]}-{rs[j]}" if j - i >= 2 else ",".join(map(str, rs[i:j + 1])))
        i = j + 1
    return "ranks " + ",".join(parts)


def groups_of(folder: Folder) -> list[Group]:
    """The communicators, matched across ranks by id; a grown communicator whose id only its own
    rank has (an existing non-root rank of a grow) joins the grow of the same parent."""
    by_id: dict[str, Group] = {}
    for d in folder.dumps:
        if d.rank is None:
            continue
        for c in d.comms.values():
            g = by_id.setdefault(c.id, Group(c.id, {}, {}, {}))
            g.members[d.rank] = c
            g.now[d.rank] = d.monotonic
            g.tick[d.rank] = d.resolution
    for g in list(by_id.values()):
        if len(g.members) != 1 or g.first.origin != "grow" or not g.first.parent:
            continue
        (rank, comm), = g.members.items()
        homes = [h for h in by_id.values() if h is not g and rank not in h.members and len(h.members) > 1
                 and any(m.origin == "grow" and m.parent == comm.parent for m in h.members.values())]
        if len(homes) == 1:
            homes[0].members[rank] = comm
            homes[0].now[rank] = g.now[rank]
            homes[0].tick[rank] = g.tick[rank]
            del by_id[g.id]
    return sorted(by_id.values(), key=lambda g: (-len(g.members), g.id))


def _at(entries: dict[int, dict]) -> str:
    """ "at a.py:3", or each place with its ranks when the ranks called from different lines."""
    places: dict[str, list[int]] = {}
    for r, e in entries.items():
        places.setdefault(C.where(e), []).append(r)
    if len(places) == 1:
        return f"at {next(iter(places))}"
    return "at " + ", ".join(f"{w} ({ranks_text(rs)})" for w, rs in places.items())


def _seq_text(entries: dict[int, dict]) -> tuple[str, bool]:
    seqs: dict[int, list[int]] = {}
    for r, e in entries.items():
        seqs.setdefault(e["seq"], []).append(r)
    if len(seqs) == 1:
        return f"seq {next(iter(seqs))}", True
    return "seq " + "; ".join(f"{s} on {ranks_text(rs)}" for s, rs in sorted(seqs.items())), False


def _outcome(g: Group, entries: dict[int, dict]) -> str:
    """What became of the ranks' calls, ranks with the same outcome together, with the longest
    time among them (in the call, or until the dump for a call still inside)."""
    states: dict[str, list[float]] = {}
    ranks: dict[str, list[int]] = {}
    for r, e in entries.items():
        s = C.state(e)
        end = e["m_return"] if C.returned(e) else g.now.get(r, e["m_enter"])
        states.setdefault(s, []).append(end - e["m_enter"])
        ranks.setdefault(s, []).append(r)
    return "; ".join(f"{ranks_text(ranks[s])} {s} ({'after' if s != 'inside it, not returned' else 'for'} "
                     f"{'up to ' if len(ts) > 1 else ''}{C.seconds(max(ts))})" for s, ts in states.items())


def _mismatch(g: Group, k: int, present: dict[int, dict]) -> Finding:
    by_sig: dict[tuple, dict[int, dict]] = {}
    for r, e in sorted(present.items()):
        by_sig.setdefault(C.signature(e), {})[r] = e
    parts = []
    for entries in sorted(by_sig.values(), key=lambda es: (-len(es), min(es))):
        e = next(iter(entries.values()))
        parts.append(f"{ranks_text(entries)} entered {C.call(e, g.job_rank)} {_at(entries)}")
    seq, same = _seq_text(present)
    head = f"{seq} on {g.label()}" if same else f"collective call #{k} on {g.label()} ({seq})"
    minority = sorted(min(by_sig.values(), key=lambda es: (len(es), -min(es))))
    text = f"{head}: " + "; ".join(parts) + f". Outcome: {_outcome(g, present)}"
    return Finding("mismatch", text, min(e["t_enter"] for e in present.values()), minority, g.id, k,
                   {r: e["seq"] for r, e in present.items()})


def _where_now(folder: Folder, rank: int, skip: str) -> str:
    """Where a rank is inside a call on another communicator, if it is."""
    d = folder.dump_of(rank)
    inside = [(e, c) for c in d.comms.values() if c.id != skip for e in c.ops if not C.returned(e)] if d else []
    if not inside:
        return ""
    e, c = max(inside, key=lambda ec: ec[0]["m_enter"])
    return (f"; it is inside {C.call(e)} on comm {c.id} {_at({rank: e})} (seq {e['seq']}), "
            f"{C.status(e, d.monotonic, d.resolution)}")


def _last_call(folder: Folder, g: Group, rank: int) -> str:
    ops = g.members[rank].ops
    if not ops:
        return f"rank {rank} has no entry left on it"
    e, now = ops[-1], g.now[rank]
    if e["op"] in _TEARDOWN:
        return (f"rank {rank} {_TEARDOWN[e['op']]} the communicator {_at({rank: e})} (seq {e['seq']})"
                + _where_now(folder, rank, g.id))
    text = f"rank {rank}'s last call on it: {C.call(e, g.job_rank)} {_at({rank: e})} (seq {e['seq']}), {C.status(e, now, g.tick[rank])}"
    inside = _where_now(folder, rank, g.id)
    if C.returned(e):
        text += f"; {C.seconds(now - e['m_return'])} before its dump"
        if not inside:
            text += _outside(folder.dump_of(rank))
    return text + inside


def _outside(d) -> str:
    """Where a rank outside nccl4py's calls was: its main thread's Python stack when it was asked
    for its dump (docs/api/trace.md#python-stacks)."""
    if d is None or d.stacks is None:
        return (", so since then it has been outside nccl4py on this communicator (its Python stack was "
                "not recorded: no SIGUSR1 dump, or its GIL was never released)")
    gap = d.wall - d.stacks_wall
    when = "at its dump" if abs(gap) < 1 else f"{C.seconds(abs(gap))} {'before' if gap > 0 else 'after'} its dump"
    return f"; {when} its main thread was at {C.main_stack(d.stacks)}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _not_reached(folder: Folder, g: Group, k: int, present: dict[int, dict], behind: list[int]) -> Finding:
    seq, _ = _seq_text(present)
    e = next(iter(present.values()))
    text = (f"{ranks_text(behind)} never reached {seq} on {g.label()}: collective call #{k}, "
            f"{C.call(e, g.job_rank)} {_at(present)}, entered by {ranks_text(present)} "
            f"({_outcome(g, present)}). ")
    text += ". ".join(_capital(_last_call(folder, g, r)) for r in behind[:3])
    if len(behind) > 3:
        text += f". ({len(behind) - 3} more rank(s) behind)"
    return Finding("not_reached", text, min(x["t_enter"] for x in present.values()), sorted(behind), g.id, k,
                   {r: x["seq"] for r, x in present.items()})


def check_collectives(folder: Folder, g: Group) -> list[Finding]:
    """The first collective call on which the ranks differ, or that some ranks never reached."""
    idx = {r: {e["coll"]: e for e in c.ops if C.is_collective(e)} for r, c in g.members.items()}
    have = [d for d in idx.values() if d]
    if len(g.members) < 2 or not have:
        return []
    lo, hi = max(min(d) for d in have), max(max(d) for d in have)
    for k in range(lo, hi + 1):
        present = {r: d[k] for r, d in idx.items() if k in d}
        if len({C.signature(e) for e in present.values()}) > 1:
            return [_mismatch(g, k, present)]
        behind = sorted(r for r, d in idx.items() if k not in d)
        if behind:
            return [_not_reached(folder, g, k, present, behind)]
    return []


def _segment_start(c: Comm) -> int:
    """The first collective-call segment whose point-to-point calls this ring holds whole."""
    if c.dropped == 0 or not c.ops:
        return 0
    first = c.ops[0]
    return first["coll"] + (0 if C.is_collective(first) else 1)


def check_p2p(g: Group) -> list[Finding]:
    """Sends and receives paired between two collective calls: the n-th Send from a to b against
    the n-th Recv of b from a, in count and type; one left without its partner."""
    pairs: dict[tuple, tuple[list, list]] = {}
    start = {}
    for r, c in g.members.items():
        start[c.rank] = _segment_start(c)
        for e in c.ops:
            if e["op"] not in ("Send", "Recv") or e.get("peer") is None or c.rank is None:
                continue
            key = (c.rank, e["peer"], e["coll"]) if e["op"] == "Send" else (e["peer"], c.rank, e["coll"])
            pairs.setdefault(key, ([], []))[e["op"] == "Recv"].append((r, e))
    found = []
    for (src, dst, k), (sends, recvs) in sorted(pairs.items()):
        a, b = g.job_rank(src), g.job_rank(dst)
        if a is None or b is None or k < max(start.get(src, 0), start.get(dst, 0)):
            continue
        for (ra, s), (rb, rv) in zip(sends, recvs):
            if (s.get("count"), s.get("dtype")) != (rv.get("count"), rv.get("dtype")):
                text = (f"rank {ra}'s {C.call(s, g.job_rank)} {_at({ra: s})} (seq {s['seq']}) met rank {rb}'s "
                        f"{C.call(rv, g.job_rank)} {_at({rb: rv})} (seq {rv['seq']}) on {g.label()}. "
                        f"Outcome: {_outcome(g, {ra: s, rb: rv})}")
                found.append(Finding("p2p_mismatch", text, min(s["t_enter"], rv["t_enter"]), sorted({ra, rb}), g.id,
                                     k, {ra: s["seq"], rb: rv["seq"]}))
                break
        else:
            if len(sends) != len(recvs):
                (r, e), other = (sends[len(recvs)], b) if len(sends) > len(recvs) else (recvs[len(sends)], a)
                want = "Recv" if e["op"] == "Send" else "Send"
                n = len(recvs) if e["op"] == "Send" else len(sends)
                text = (f"rank {r}'s {C.call(e, g.job_rank)} {_at({r: e})} (seq {e['seq']} on {g.label()}) has no "
                        f"matching {want} on rank {other}, which made {n} since collective call #{k}. "
                        f"{_last_call_short(g, other)}")
                found.append(Finding("p2p_unmatched", text, e["t_enter"], [other], g.id, k, {r: e["seq"]}))
    return found


def _last_call_short(g: Group, rank: int) -> str:
    ops = g.members[rank].ops
    if not ops:
        return ""
    e = ops[-1]
    return f"Rank {rank}'s last call there: {C.call(e, g.job_rank)} {_at({rank: e})} (seq {e['seq']}), {C.status(e, g.now[rank], g.tick[rank])}"


def check_hang(g: Group) -> list[Finding]:
    """Every rank of the communicator inside the same last call, none returned."""
    n = g.nranks
    if n is None or len(g.members) < n:
        return []
    last = {r: c.ops[-1] for r, c in g.members.items() if c.ops}
    if len(last) < n or any(C.returned(e) for e in last.values()):
        return []
    seq, _ = _seq_text(last)
    calls = {C.call(e, g.job_rank) for e in last.values()}
    what = next(iter(calls)) if len(calls) == 1 else " / ".join(sorted(calls))
    text = (f"all {n} ranks of {g.label()} are inside {what} {_at(last)} ({seq}) and none returned: "
            f"their calls agree, so the wait is in the library or below it (the devices, the network, "
            f"another communicator these ranks also wait on). {_outcome(g, last)}")
    return [Finding("hang", text, min(e["t_enter"] for e in last.values()), sorted(last), g.id, None,
                    {r: e["seq"] for r, e in last.items()})]


def _survivors_context(folder: Folder, groups: list[Group]) -> str:
    """Where the ranks that dumped were when the job went wrong: their newest call that had not
    returned, or had failed."""
    places: dict[str, list[int]] = {}
    for g in groups:
        for r, c in g.members.items():
            stuck = [e for e in c.ops if not C.returned(e) or e.get("rc") not in (0, 7, None)]
            if stuck:
                e = stuck[-1]
                key = f"{C.call(e, g.job_rank)} {_at({r: e})} (seq {e['seq']} on comm {g.id})"
                if r not in sum(places.values(), []):
                    places.setdefault(key, []).append(r)
    if not places:
        return ""
    return "; ".join(f"{ranks_text(rs)} {'was' if len(rs) == 1 else 'were'} in {k}" for k, rs in places.items())


def check_missing(folder: Folder, groups: list[Group]) -> list[Finding]:
    """Ranks of the job with no dump, and what the launcher saw of them."""
    if folder.world_size is None:
        return []
    have = {d.rank for d in folder.dumps}
    launch = (folder.launch or {}).get("by_rank", {})
    found = []
    context = None
    for r in range(folder.world_size):
        info = launch.get(r, {})
        if r in have and info.get("state") != "killed" or info.get("state") == "exited" and info.get("code") == 0:
            continue  # a dump to read, or a rank that finished (it had nothing to write)
        if context is None:
            context = _survivors_context(folder, groups)
        when = info.get("wall") if isinstance(info.get("wall"), (int, float)) else float("inf")
        if info.get("state") == "killed":
            dumped = "" if r not in have else "; its last dump was written before"
            text = f"rank {r} died (the launcher saw {info.get('signal')}" + (
                "; no dump" if r not in have else dumped) + ")"
            kind = "died"
        elif info.get("state") == "exited":
            text = (f"rank {r} exited with code {info.get('code')} and wrote no dump (it failed outside "
                    f"nccl4py's calls, before its first communicator, or with recording off)")
            kind = "died"
        else:
            text = (f"no dump from rank {r} of {folder.world_size} (it died, was killed, never created a "
                    f"communicator, or wrote to another folder; python -m nccl.run records how each rank ended)")
            kind = "no_dump"
        if context:
            text += f"; {context}"
        found.append(Finding(kind, text, when, [r]))
    return found


def findings_of(folder: Folder) -> tuple[list[Group], list[Finding]]:
    groups = groups_of(folder)
    found = check_missing(folder, groups)
    for g in groups:
        found += check_collectives(folder, g)
        found += check_p2p(g)
    if not any(f.kind != "no_dump" for f in found):
        for g in groups:
            found += check_hang(g)
    # Calls that differ come first (in time order); then a rank that died, since the survivors'
    # disagreement about how far they got is its consequence; then ranks that fell behind.
    order = {"mismatch": 0, "p2p_mismatch": 0, "died": 1, "not_reached": 2, "p2p_unmatched": 2, "hang": 3,
             "no_dump": 4}
    found.sort(key=lambda f: (order[f.kind], f.when))
    return groups, found
