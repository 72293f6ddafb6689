"""The verdict as a user reads it: plain text (a headline, the other findings, each rank's last
calls) or JSON (``--json``), both from one ``Report``."""

from __future__ import annotations

from dataclasses import dataclass

from nccl.trace import _calls as C
from nccl.trace._files import Folder
from nccl.trace._verdict import Finding, Group, ranks_text

VERDICT_FORMAT = "nccl4py-trace-verdict"


@dataclass
class Report:
    """What ``nccl.trace.analyze`` found in one job's dumps."""

    folder: Folder
    groups: list[Group]
    findings: list[Finding]

    @property
    def verdict(self) -> str:
        """The first finding in time, in words; or that the ranks agree."""
        if self.findings:
            return self.findings[0].text
        ncoll = sum(max((e["coll"] for c in g.members.values() for e in c.ops), default=0) for g in self.groups)
        return (f"no divergence: on each of the {len(self.groups)} communicator(s) the ranks' calls agree "
                f"({ncoll} collective call(s) compared) and no call is left inside the library")

    def last_calls(self, k: int) -> dict[int, list[tuple[Group, dict]]]:
        """Each rank's last k entries over all its communicators, oldest first."""
        out: dict[int, list[tuple[Group, dict]]] = {}
        for g in self.groups:
            for r, c in g.members.items():
                out.setdefault(r, []).extend((g, e) for e in c.ops[-k:] if k > 0)
        return {r: sorted(es, key=lambda ge: ge[1]["m_enter"])[-k:] for r, es in sorted(out.items())}

    def to_json(self, last: int = 5) -> dict:
        f = self.folder
        return {
            "format": VERDICT_FORMAT, "version": 1, "folder": str(f.path), "job": f.job,
            "world_size": f.world_size, "ranks": [d.rank for d in f.dumps if d.rank is not None],
            "notes": f.notes, "verdict": self.verdict, "findings": [x.to_json() for x in self.findings],
            "errors": {str(d.rank): d.error for d in f.dumps if d.error},
            "last": {str(r): [dict(e, comm=g.id) for g, e in es] for r, es in self.last_calls(last).items()},
            "stacks": {str(d.rank): d.stacks for d in f.dumps if d.rank is not None and d.stacks is not None},
        }

    def text(self, last: int = 5) -> str:
        f = self.folder
        ranks = [d.rank for d in f.dumps if d.rank is not None]
        size = f" of {f.world_size}" if f.world_size is not None else ""
        reasons = sorted({d.reason for d in f.dumps if d.reason})
        job = "with no job id" if f.job is None else f"of job {f.job!r}"
        lines = [f"{len(f.dumps)} dump(s) {job} in {f.path}: {ranks_text(ranks) if ranks else 'no rank'}"
                 f"{size} (written on: {', '.join(reasons)})"]
        lines += [f"note: {n}" for n in f.notes]
        lines += ["", f"verdict: {self.verdict}"]
        if len(self.findings) > 1:
            lines += ["", "also:"] + [f"  - {x.text}" for x in self.findings[1:]]
        errors = [(d.rank, d.error) for d in f.dumps if d.error]
        if errors:
            lines += ["", "errors the ranks saw:"] + [f"  rank {r}: {e}" for r, e in errors]
        table = self.last_calls(last)
        if last > 0 and table:
            lines += ["", f"last {last} call(s) of each rank (seq / collective call #):"]
            for r, es in table.items():
                d = f.dump_of(r)
                now, tick = (d.monotonic, d.resolution) if d else (None, 0.0)
                for g, e in es:
                    lines.append(f"  rank {r:<3} comm {g.id[:8]}  {e['seq']:>6} / {e['coll']:<6} "
                                 f"{C.call(e, g.job_rank):<44} {C.where(e):<28} {C.status(e, now, tick)}")
        stacks = [(d.rank, d.stacks) for d in f.dumps if d.rank is not None and d.stacks]
        if stacks:
            lines += ["", "main threads' Python stacks when asked for a dump (innermost last; --json has every thread):"]
            for r, threads in stacks:
                main = next((t for t in threads if t.get("main")), threads[0])
                lines += [f"  rank {r}:"] + [f"    {C.frame(fr)}" for fr in main["frames"]]
        return "\n".join(lines)
