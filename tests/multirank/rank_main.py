"""One rank of a multi-rank test: set up by harness.launch through the environment.

Reads RANK, WORLD_SIZE, NCCL_MR_UID (hex), NCCL_MR_TARGET ("module:function" or code),
NCCL_MR_PARAMS (JSON), NCCL_MR_INIT and NCCL_MR_RESULT (a path).  Creates the communicator
(unless NCCL_MR_INIT=0), calls the target with a RankContext, destroys the communicator, and
writes {"value": ..., "error": ...} to the result file.  Exit status 0 when the target returned,
1 when it raised.
"""

import importlib
import json
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import nccl.bindings.nccl as b  # noqa: E402


class RankContext:
    """What a rank-side check gets: rank, size, comm (an int handle), the id, params, b, np."""

    def __init__(self, rank, size, uid, params, comm=None):
        self.rank, self.size, self.uid, self.params, self.comm = rank, size, uid, params, comm
        self.b, self.np = b, np
        self.extra = {}


class Fails:
    """A rank-side check's failures, each naming the rank (the value["failures"] that
    harness.assert_clean judges): check(cond, what), raises(...), raises_saying(...), result()."""

    def __init__(self, ctx):
        self.rank, self.size, self.items = ctx.rank, ctx.size, []

    def check(self, cond, what):
        if not cond:
            self.items.append(f"rank {self.rank}/{self.size}: {what}")

    def _call(self, exc_type, fn, args, kwargs):
        """(what fn(*args, **kwargs) raised, or None; whether it was an exc_type), a wrong outcome
        recorded."""
        try:
            fn(*args, **kwargs)
        except exc_type as exc:
            return exc, True
        except Exception as exc:  # noqa: BLE001 - reported as a failure
            self.check(False, f"{getattr(fn, '__name__', fn)}: raised {type(exc).__name__}: {exc}, "
                              f"want {exc_type.__name__}")
            return exc, False
        self.check(False, f"{getattr(fn, '__name__', fn)}: did not raise {exc_type.__name__}")
        return None, False

    def raises(self, exc_type, message, fn, *args, **kwargs):
        """fn(...) raises exc_type whose message (exc.msg, else str(exc)) is exactly message (None:
        any). Returns what it raised."""
        exc, ok = self._call(exc_type, fn, args, kwargs)
        if ok:
            text = getattr(exc, "msg", None) or str(exc)
            self.check(message is None or text == message,
                       f"{getattr(fn, '__name__', fn)}: message {text!r} != {message!r}")
        return exc

    def raises_saying(self, exc_type, text, fn, *args, **kwargs):
        """fn(...) raises exc_type; text occurs in its library's last error (exc.last_error, else
        its message). Returns what it raised."""
        exc, ok = self._call(exc_type, fn, args, kwargs)
        if ok:
            said = getattr(exc, "last_error", None) or getattr(exc, "msg", None) or str(exc)
            self.check(text in said, f"{getattr(fn, '__name__', fn)}: {said!r} does not say {text!r}")
        return exc

    def result(self, **extra):
        return {"failures": self.items, **extra}


def init_comm(size, uid, rank):
    box = b.PointerBox()
    b.comm_init_rank(box.address, size, uid, rank)
    return box.ptr


def resolve(target):
    if "\n" not in target and ":" in target and " " not in target:
        mod, func = target.split(":", 1)
        return getattr(importlib.import_module(mod), func)

    def run_code(ctx):
        ns = {"ctx": ctx, "rank": ctx.rank, "size": ctx.size, "comm": ctx.comm, "b": b, "np": np,
              "params": ctx.params, "result": None}
        exec(compile(target, "<rank code>", "exec"), ns)
        return ns["result"]

    return run_code


def error_doc(exc):
    return {"type": type(exc).__name__, "status": getattr(exc, "status", None),
            "message": str(exc), "traceback": traceback.format_exc()}


def main():
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    uid = bytes.fromhex(os.environ["NCCL_MR_UID"])
    params = json.loads(os.environ.get("NCCL_MR_PARAMS", "null"))
    out = Path(os.environ["NCCL_MR_RESULT"])
    doc = {"value": None, "error": None}
    ctx = None
    try:
        func = resolve(os.environ["NCCL_MR_TARGET"])
        comm = init_comm(size, uid, rank) if os.environ.get("NCCL_MR_INIT", "1") == "1" else None
        ctx = RankContext(rank, size, uid, params, comm)
        doc["value"] = func(ctx)
        if ctx.comm is not None:
            c, ctx.comm = ctx.comm, None
            b.comm_destroy(c)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, whatever it is
        doc["error"] = error_doc(exc)
    if ctx is not None:
        doc["extra"] = ctx.extra
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(out)
    sys.stdout.flush()
    return 1 if doc["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
