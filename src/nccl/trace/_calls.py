"""How the verdict names one recorded call: ``AllReduce(count=1048576, float32, sum)``, ``Send to
rank 3 (count=8, float32)``, where it was made (``train.py:88``) and what became of it."""

from __future__ import annotations

import os
from functools import lru_cache

@lru_cache(maxsize=None)
def every_rank_ops() -> frozenset:
    """The op names that every rank of a communicator calls (the recorder's own table, generated
    from tools/nccl_surface.py's TRACE_OPS)."""
    from nccl import _ext

    return frozenset(name for name, every, _ in _ext._trace_ops() if every)


@lru_cache(maxsize=None)
def peer_words() -> dict:
    """The word the verdict puts before the peer of a point-to-point op ("to", "from"), by op name."""
    from nccl import _ext

    return {name: word for name, _, word in _ext._trace_ops() if word}


def is_collective(entry: dict) -> bool:
    return entry["op"] in every_rank_ops()


def signature(entry: dict) -> tuple:
    """What every rank must pass alike to a collective call."""
    return (entry["op"], entry.get("count"), entry.get("dtype"), entry.get("redop"), entry.get("root"))


def _args(entry: dict) -> list[str]:
    out = []
    if entry.get("root") is not None:
        out.append(f"root={entry['root']}")
    if entry.get("count") is not None:
        out.append(f"count={entry['count']}")
    for name in ("dtype", "redop"):
        if entry.get(name) is not None:
            out.append(str(entry[name]))
    return out


def call(entry: dict, peer_rank=None) -> str:
    """The call with its arguments; peer_rank maps a communicator rank to the job's rank."""
    op = entry["op"]
    args = ", ".join(_args(entry))
    words = peer_words()
    if op in words and entry.get("peer") is not None:
        peer = entry["peer"]
        shown = peer_rank(peer) if peer_rank else None
        who = f"rank {shown}" if shown is not None and shown == peer else (
            f"rank {shown} (its rank {peer} there)" if shown is not None else f"communicator rank {peer}")
        return f"{op} {words[op]} {who}" + (f" ({args})" if args else "")
    return f"{op}({args})" if args else op


def where(entry: dict) -> str:
    """file:line of the Python caller, relative to the working folder when under it."""
    path = entry.get("file")
    if not path:
        return "(no Python caller)"
    path = str(path)
    here = os.getcwd() + os.sep
    if path.startswith(here):
        path = path[len(here):]
    line = entry.get("line")
    return f"{path}:{line}" if line is not None else path


def frame(f: dict, code: bool = True) -> str:
    """One frame of a stack file: "train.py:12 in step", with its source line when asked."""
    text = f"{where(f)} in {f['func']}"
    return f"{text} ({f['code']})" if code and f.get("code") else text


def main_stack(threads: list[dict], depth: int = 3) -> str:
    """Where the main thread (else the first) was: its innermost frame with its source line, then
    the callers, up to `depth` frames."""
    if not threads:
        return "no Python thread"
    t = next((t for t in threads if t.get("main")), threads[0])
    frames = t["frames"][::-1][:depth]
    if not frames:
        return "no Python frame"
    text = frame(frames[0])
    if len(frames) > 1:
        text += ", called from " + ", from ".join(frame(f, code=False) for f in frames[1:])
    return text


def returned(entry: dict) -> bool:
    return entry.get("m_return") is not None


def status(entry: dict, now: float | None, tick: float = 0.0) -> str:
    """What became of the call: returned (with a non-zero status named), or still inside the
    library for how long before the file was written (`now`: the dump's monotonic time). `tick` is
    the resolution of the dump's clock: a call that returned within one tick of its entry says so
    rather than "after 0 us"."""
    if returned(entry):
        rc = entry.get("rc")
        took = entry["m_return"] - entry["m_enter"]
        after = f"within a clock tick ({_seconds(tick)})" if took < tick else f"after {_seconds(took)}"
        if rc in (0, 7, None):
            return f"returned {after}"
        return f"returned {_result_name(rc)} {after}"
    if now is None:
        return "not returned"
    return f"inside it for {_seconds(now - entry['m_enter'])}, not returned"


def state(entry: dict) -> str:
    """The outcome without its time, to group ranks by: "returned", "returned ncclTimeout (8)",
    "inside it, not returned"."""
    if not returned(entry):
        return "inside it, not returned"
    rc = entry.get("rc")
    return "returned" if rc in (0, 7, None) else f"returned {_result_name(rc)}"


def _seconds(s: float) -> str:
    if s < 0.001:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.1f} s"


def seconds(s: float) -> str:
    return _seconds(max(s, 0.0))


@lru_cache(maxsize=None)
def _result_name(rc: int) -> str:
    from nccl._enums import Result

    try:
        return f"nccl{Result(rc).name} ({rc})"
    except ValueError:
        return f"status {rc}"
