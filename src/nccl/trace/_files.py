"""Reading a folder of flight-recorder files (docs/api/trace.md#the-file-format) for the verdict:
every rank's dump, checked line by line, and the launcher's account of how each rank ended.

Nothing here raises on a bad file: each problem becomes a note in plain words and the file (or the
part of it that could be read) is left out. Only a folder that cannot be analysed at all (no dump,
or the dumps of several jobs with no ``job`` chosen) raises ``TraceInputError``."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from nccl.trace._stacks import FORMAT as STACKS_FORMAT
from nccl.trace._stacks import VERSION as STACKS_VERSION
from nccl.trace._stacks import path_of as stacks_path_of

FORMAT = "nccl4py-trace"
VERSION = 1
# The file python -m nccl.run writes beside the dumps: how each rank ended (docs/api/trace.md#the-launcher).
LAUNCH_FILE = "launcher.json"
LAUNCH_FORMAT = "nccl4py-launch"


class TraceInputError(Exception):
    """The folder holds nothing the verdict can be made from; the message says what and why."""


@dataclass
class Comm:
    """One communicator's line in one rank's file, with its entries (oldest first)."""

    id: str
    rank: int | None
    nranks: int | None
    parent: str | None
    color: int | None
    origin: str
    recorded: int
    dropped: int
    ops: list[dict] = field(default_factory=list)


@dataclass
class Dump:
    """One process's file."""

    path: Path
    rank: int | None
    job: str | None
    world_size: int | None
    pid: int | None
    host: str | None
    reason: str | None
    error: str | None
    wall: float
    monotonic: float
    comms: dict[str, Comm]
    resolution: float = 0.0  # of the clock of its m_* fields, in seconds (header "resolution")
    # Every Python thread's stack when the process was asked for a dump (rank<R>.stack.json,
    # docs/api/trace.md#python-stacks), main thread first, frames oldest first; and when.
    stacks: list[dict] | None = None
    stacks_wall: float | None = None

    @property
    def who(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"pid {self.pid}"


@dataclass
class Folder:
    """What the verdict works from: one job's dumps, the launcher's record, and the notes."""

    path: Path
    job: str | None
    world_size: int | None
    dumps: list[Dump]
    launch: dict | None
    notes: list[str]

    def dump_of(self, rank: int) -> Dump | None:
        for d in self.dumps:
            if d.rank == rank:
                return d
        return None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return (isinstance(v, (int, float))) and not isinstance(v, bool)


# Fields a line must have for the verdict to use it, and the check of each value.
_HEADER = {"rank": lambda v: v is None or _is_int(v), "world_size": lambda v: v is None or _is_int(v),
           "job": lambda v: v is None or isinstance(v, str), "pid": lambda v: v is None or _is_int(v),
           "wall": _is_num, "monotonic": _is_num}
_COMM = {"comm": lambda v: isinstance(v, str) and len(v) == 16, "rank": lambda v: v is None or _is_int(v),
         "nranks": lambda v: v is None or _is_int(v), "parent": lambda v: v is None or isinstance(v, str),
         "origin": lambda v: isinstance(v, str), "recorded": _is_int, "dropped": _is_int}
_OP = {"comm": lambda v: isinstance(v, str), "seq": _is_int, "coll": _is_int, "op": lambda v: isinstance(v, str),
       "m_enter": _is_num, "t_enter": _is_num}


def _bad_field(line: dict, checks: dict) -> str | None:
    for name, ok in checks.items():
        if name not in line:
            return f"has no {name!r}"
        if not ok(line[name]):
            return f"has {name!r} = {line[name]!r}"
    return None


def _parse_header(name: str, first: str) -> tuple[dict | None, str | None]:
    try:
        header = json.loads(first)
    except ValueError:
        return None, f"{name} is not a flight-recorder file (line 1 is not JSON)"
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None, f"{name} is not a flight-recorder file (line 1 has no \"format\": \"{FORMAT}\")"
    version = header.get("version")
    if version != VERSION:
        newer = _is_int(version) and version > VERSION
        return None, (f"{name} is format version {version!r}; this nccl4py reads version {VERSION}"
                      + (" (it was written by a newer nccl4py: read it with that one)" if newer else ""))
    bad = _bad_field(header, _HEADER)
    if bad:
        return None, f"{name}: its header {bad}; the file is left out"
    return header, None


def read_dump(path: Path) -> tuple[Dump | None, list[str]]:
    """One file: the dump (None when nothing of it is usable) and the notes about it."""
    name, notes = path.name, []
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        return None, [f"{name} cannot be read: {exc.strerror or exc}"]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return None, [f"{name} is empty"]
    header, problem = _parse_header(name, lines[0])
    if header is None:
        return None, [problem]
    dump = Dump(path, header["rank"], header["job"], header["world_size"], header["pid"], header.get("host"),
                header.get("reason"), header.get("error"), float(header["wall"]), float(header["monotonic"]), {},
                float(header["resolution"]) if _is_num(header.get("resolution")) else 0.0)
    for number, raw in enumerate(lines[1:], start=2):
        try:
            line = json.loads(raw)
            if not isinstance(line, dict):
                raise ValueError
        except ValueError:
            where = "its last line" if number == len(lines) else f"line {number} of {len(lines)}"
            notes.append(f"{name}: {where} is not JSON (the file was cut short or edited); "
                         f"the {number - 1} line(s) before it are used")
            break
        kind = line.get("type")
        if kind == "comm":
            bad = _bad_field(line, _COMM)
            if bad:
                notes.append(f"{name}: line {number}, a communicator, {bad}; it is left out")
                continue
            dump.comms[line["comm"]] = Comm(line["comm"], line["rank"], line["nranks"], line["parent"],
                                            line.get("color"), line["origin"], line["recorded"], line["dropped"])
        elif kind == "op":
            bad = _bad_field(line, _OP)
            comm = dump.comms.get(line.get("comm"))
            if bad or comm is None:
                why = bad or f"names communicator {line.get('comm')!r}, which has no line before it"
                notes.append(f"{name}: line {number}, an entry, {why}; it is left out")
                continue
            comm.ops.append(line)
        else:
            notes.append(f"{name}: line {number} has type {kind!r} (not \"comm\" or \"op\"); it is left out")
    for comm in dump.comms.values():
        comm.ops.sort(key=lambda o: o["seq"])
    return dump, notes


def _frames_ok(threads) -> bool:
    return isinstance(threads, list) and all(
        isinstance(t, dict) and isinstance(t.get("frames"), list) and all(
            isinstance(f, dict) and isinstance(f.get("file"), str) and _is_int(f.get("line"))
            and isinstance(f.get("func"), str) for f in t["frames"]) for t in threads)


def read_stacks(dump: Dump) -> str | None:
    """Attaches the stacks written beside `dump` by the same process, if any; a note when the file
    is there but cannot be used."""
    path = Path(stacks_path_of(dump.path))
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return f"{path.name} cannot be read as JSON; {dump.who}'s Python stacks are left out"
    if not isinstance(doc, dict) or doc.get("format") != STACKS_FORMAT or doc.get("version") != STACKS_VERSION \
            or not _frames_ok(doc.get("threads")) or not _is_num(doc.get("wall")):
        return f"{path.name} is not a stack file of version {STACKS_VERSION}; it is left out"
    if doc.get("pid") != dump.pid:
        return None  # another process's (an earlier run's rank R): nothing to say of this one
    dump.stacks, dump.stacks_wall = doc["threads"], float(doc["wall"])
    return None


def _read_launch(folder: Path, notes: list[str]) -> dict | None:
    path = folder / LAUNCH_FILE
    if not path.exists():
        return None
    try:
        launch = json.loads(path.read_text())
    except (OSError, ValueError):
        notes.append(f"{LAUNCH_FILE} cannot be read as JSON; how each rank ended is not known")
        return None
    if (not isinstance(launch, dict) or launch.get("format") != LAUNCH_FORMAT or launch.get("version") != VERSION
            or not isinstance(launch.get("ranks"), list)):
        notes.append(f"{LAUNCH_FILE} is not a launcher record of version {VERSION}; it is left out")
        return None
    ranks = {}
    for r in launch["ranks"]:
        if isinstance(r, dict) and _is_int(r.get("rank")):
            ranks[r["rank"]] = r
    launch["by_rank"] = ranks
    return launch


def _jobs_text(jobs: dict) -> str:
    parts = []
    for job, dumps in jobs.items():
        ranks = ",".join(str(d.rank) if d.rank is not None else f"pid{d.pid}" for d in dumps)
        parts.append(f"{'no job id' if job is None else repr(job)} (ranks {ranks})")
    return "; ".join(parts)


def load(path: str | os.PathLike, job: str | None = None) -> Folder:
    """The dumps of one job in folder `path` (or the one file `path`).

    Raises TraceInputError when there is no usable dump, or the folder mixes the dumps of several
    jobs and `job` does not choose one."""
    path = Path(path)
    notes: list[str] = []
    if path.is_file():
        files, folder = [path], path.parent
    elif path.is_dir():
        folder = path
        files = sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file()
                       and (p.name.startswith("rank") or p.name.startswith("pid")))
    else:
        raise TraceInputError(f"{path} does not exist")
    dumps = []
    for f in files:
        dump, more = read_dump(f)
        notes.extend(more)
        if dump is not None:
            dumps.append(dump)
            note = read_stacks(dump)
            if note:
                notes.append(note)
    if not dumps:
        why = "; ".join(notes) if notes else "no rank<R>.jsonl or pid<P>.jsonl file in it"
        raise TraceInputError(f"no flight-recorder dump to analyse in {path}: {why}")
    jobs: dict = {}
    for d in dumps:
        jobs.setdefault(d.job, []).append(d)
    if job is not None:
        if job not in jobs:
            raise TraceInputError(f"no dump of job {job!r} in {path}; it holds {_jobs_text(jobs)}")
        dumps = jobs[job]
    elif len(jobs) > 1:
        raise TraceInputError(f"{path} holds the dumps of {len(jobs)} jobs: {_jobs_text(jobs)}; "
                              f"choose one with --job (the header's \"job\")")
    chosen = dumps[0].job
    by_rank: dict = {}
    for d in dumps:
        if d.rank is None:
            continue
        other = by_rank.get(d.rank)
        if other is not None:
            old, new = sorted((other, d), key=lambda x: x.wall)
            notes.append(f"two dumps say rank {d.rank} ({old.path.name}, pid {old.pid}, and {new.path.name}, "
                         f"pid {new.pid}); the newer, {new.path.name}, is used")
            dumps = [x for x in dumps if x is not old]
            d = new
        by_rank[d.rank] = d
    sizes = sorted({d.world_size for d in dumps if d.world_size is not None})
    if len(sizes) > 1:
        notes.append(f"the dumps disagree on the job's size ({', '.join(map(str, sizes))} ranks); "
                     f"{sizes[-1]} is used")
    launch = _read_launch(folder, notes)
    if launch is not None and launch.get("job") != chosen:
        notes.append(f"{LAUNCH_FILE} is of job {launch.get('job')!r}, not {chosen!r}; it is left out")
        launch = None
    world = sizes[-1] if sizes else None
    if launch is not None and _is_int(launch.get("world_size")):
        world = max(world or 0, launch["world_size"])
    dumps.sort(key=lambda d: (d.rank is None, d.rank if d.rank is not None else d.pid or 0))
    return Folder(folder, chosen, world, dumps, launch, notes)
