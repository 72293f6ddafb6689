"""Every Python thread's stack at a SIGUSR1 dump (docs/api/trace.md#python-stacks): written beside
the dump by the recorder's stack thread (src/ext/trace/trace_stack.c, with the GIL), read back by the
verdict to say where a rank that is not inside a call is.

``rank<R>.stack.json`` (``pid<P>.stack.json`` beside ``pid<P>.jsonl``), one JSON object:

    {"format": "nccl4py-stacks", "version": 1, "pid": 4242, "wall": 1764946800.1,
     "threads": [{"id": 140234, "name": "MainThread", "main": true,
                  "frames": [{"file": "train.py", "line": 12, "func": "<module>", "code": "step()"}, ...]}]}

Frames are oldest first, as in a traceback; the main thread comes first. Written whole to a
temporary file, then renamed, as the dumps are."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback

FORMAT = "nccl4py-stacks"
VERSION = 1
SUFFIX = ".stack.json"


def path_of(dump: str | os.PathLike) -> str:
    """The stack file beside a dump: rank1.jsonl -> rank1.stack.json."""
    base, _ = os.path.splitext(os.fspath(dump))
    return base + SUFFIX


def current() -> list[dict]:
    """Every Python thread's frames but the caller's, the main thread first."""
    me = threading.get_ident()
    main = threading.main_thread().ident
    names = {t.ident: t.name for t in threading.enumerate()}
    threads = []
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        frames = [{"file": f.filename, "line": f.lineno, "func": f.name, "code": f.line or None}
                  for f in traceback.extract_stack(frame)]
        threads.append({"id": ident, "name": names.get(ident), "main": ident == main, "frames": frames})
    threads.sort(key=lambda t: (not t["main"], t["id"]))
    return threads


def write(dump: str) -> str:
    """Writes the stacks of this process beside `dump`; the file's path."""
    path = path_of(dump)
    doc = {"format": FORMAT, "version": VERSION, "pid": os.getpid(), "wall": time.time(), "threads": current()}
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
    return path
