"""Runs hostile cases in this process, from one index on, for test_hostile.py:

    python child.py single|pair START RESULTS
    python child.py list single|pair OUT      # the cases, as JSON, for the test to count and name

Before each case it appends {"i": i} to RESULTS, after it {"i": i, "v": verdict, ...}, so that a
crash or a hang names the case that was running. The verdict of a case:

* "ok": the call returned or raised a Python exception;
* "raw": a binding reached the library with a communicator a callback had destroyed: raw handles
  of nccl.bindings are the caller's responsibility, and the host backend reported it;
* "fail": nccl.core reached the library with a destroyed communicator (the host backend's
  "already destroyed or aborted"), or a SystemError (a C error return without its exception);
* "skip": the entry needs a newer Python, or a lying value at a raw-address parameter.

RANK and WORLD_SIZE give the rank (two ranks for "pair"); HOSTILE_THREADS=1 runs a second thread
that keeps mutating every list the case passed while the call walks it.
"""

import faulthandler
import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catalogue  # noqa: E402
import surface  # noqa: E402
import world as w  # noqa: E402
import nccl.bindings.nccl as b  # noqa: E402
import nccl.core as nc  # noqa: E402

DESTROYED = "was already destroyed or aborted"


def _arguments(world, case, entry, target):
    """(args, kwargs) of the call: the honest value of every required parameter, the hostile
    object at the case's; optional parameters otherwise keep their defaults."""
    c, args, kwargs, gap = case.callable, [], {}, False
    for q in c.params:
        if q.name == case.param.name:
            base = getattr(target, c.name) if c.kind == "setter" else w.honest(world, c, q.name)
            world.keep.append(base)  # an int made from a struct's address must not outlive it
            value = entry.make(world, base)
        elif q.required:
            value = w.honest(world, c, q.name)
        else:
            gap = True
            continue
        if q.keyword_only or gap:
            kwargs[q.name] = value
        else:
            args.append(value)
    return args, kwargs


def _partner(world, c):
    """The matching call of a point-to-point one (at one rank a send waits for its recv)."""
    if c.layer == "core":
        other = world.core.recv if c.name == "send" else world.core.send
        return lambda: other(world.int8(), 0)
    other = b.recv if c.name == "send" else b.send
    return lambda: other(world.addr(), 16, 7, 0, world.bcomm, 0)


class NoList(Exception):
    """A case without a list argument, which the mutating thread has nothing to do for."""


def _call(world, case, entry, threads):
    c = case.callable
    world.begin(c.layer, None)
    recv = w.receiver(world, c)
    if isinstance(recv, nc.Communicator) and c.kind == "method":
        world.target = recv
    args, kwargs = _arguments(world, case, entry, recv)
    if threads and not world.lists:
        raise NoList
    if c.kind == "setter":
        return setattr(recv, c.name, *args)
    fn = recv if c.kind in ("function", "constructor") else getattr(recv, c.name)
    if c.name not in ("send", "recv"):
        return fn(*args, **kwargs)
    b.group_start()
    try:
        result = fn(*args, **kwargs)
        _partner(world, c)()
    finally:
        b.group_end()
    return result


def run_case(world, case, entry, threads=False):
    c = case.callable
    if entry.needs:
        return {"v": "skip", "why": entry.needs}
    if entry.lies and case.param.name in w.RAW[c.layer]:
        return {"v": "skip", "why": "a lying value at a raw parameter"}
    result = None
    try:
        result = _call(world, case, entry, threads)
        verdict = {"v": "ok", "how": "returned"}
    except NoList:
        verdict = {"v": "skip", "why": "no list for the mutating thread"}
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, SystemError):
            verdict = {"v": "fail", "why": said}
        elif DESTROYED in str(exc):
            verdict = {"v": "fail" if c.layer == "core" else "raw", "why": said}
        else:
            verdict = {"v": "ok", "how": type(exc).__name__}
    try:
        world.end(result, made=c.kind != "constructor")
    except Exception as exc:
        verdict.setdefault("note", f"cleanup: {type(exc).__name__}: {exc}")
    return verdict


class Mutator(threading.Thread):
    """Keeps changing every list the current case passed: insertions, removals, reversal."""

    def __init__(self, world):
        super().__init__(daemon=True)
        self.world, self.running = world, True

    def run(self):
        n = 0
        while self.running:
            for items in list(self.world.lists):
                n += 1
                try:
                    items.append(0)
                    items.reverse()
                    del items[-1]
                    if n % 7 == 0:
                        saved = items[:]
                        items.clear()
                        items.extend(saved)
                except (IndexError, ValueError):
                    pass


def list_cases(mode, out):
    cases = surface.cases(catalogue.ENTRIES, pair=mode == "pair")
    Path(out).write_text(json.dumps({
        "cases": [c.id for c in cases], "callables": len(surface.callables()),
        "with_params": len({c.callable.id for c in cases}),
        "params": len({(c.callable.id, c.param.name) for c in cases}),
        "entries": len(catalogue.ENTRIES), "unsigned": surface.UNSIGNED}))


def main():
    if sys.argv[1] == "list":
        return list_cases(sys.argv[2], sys.argv[3])
    mode, start, results = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    faulthandler.enable()
    rank, nranks = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    entries = {e.name: e for e in catalogue.ENTRIES}
    cases = surface.cases(catalogue.ENTRIES, pair=mode == "pair")
    world = w.World(nranks, rank, os.environ.get("HOSTILE_DIR"))
    mutator = None
    if os.environ.get("HOSTILE_THREADS") == "1":
        mutator = Mutator(world)
        mutator.start()
    fd = os.open(results, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    for case in cases[start:]:
        os.write(fd, (json.dumps({"i": case.index}) + "\n").encode())
        verdict = run_case(world, case, entries[case.entry], mutator is not None)
        os.write(fd, (json.dumps({"i": case.index, **verdict}) + "\n").encode())
    if mutator is not None:
        mutator.running = False
        mutator.join()
    world.close()
    os.close(fd)


if __name__ == "__main__":
    main()
