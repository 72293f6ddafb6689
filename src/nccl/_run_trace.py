"""python -m nccl.run and the flight recorder (docs/api/trace.md#the-launcher): every rank writes
its dumps to one folder of the launch; when a rank fails, ``--timeout`` expires or Ctrl-C stops the
job, the launcher asks the ranks still running for a dump (SIGUSR1), waits a bounded time, records
how each rank ended (``launcher.json``) and prints the verdict of ``nccl.trace`` under the failure
line."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time

from nccl.trace._files import LAUNCH_FILE, LAUNCH_FORMAT, VERSION

DUMP_WAIT_S = 5.0  # how long the ranks asked for a dump get to write it
POLL_S = 0.05


def _describe(code: int) -> dict:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return {"state": "killed", "code": None, "signal": name}
    return {"state": "exited", "code": code, "signal": None}


class LaunchTrace:
    """The launch's trace folder and job id, set in the ranks' environment by ``setup``."""

    def __init__(self, folder: str, job: str, created: bool, signal_ok: bool):
        self.folder, self.job, self.created, self.signal_ok = folder, job, created, signal_ok

    @classmethod
    def setup(cls, env: dict, token: str) -> "LaunchTrace | None":
        """Chooses the folder and the job id (the user's NCCL4PY_TRACE_DIR / NCCL4PY_TRACE_JOB when
        set) and puts them in `env`; None when recording is off (NCCL4PY_TRACE_BUFFER=0)."""
        if env.get("NCCL4PY_TRACE_BUFFER", "").strip() == "0":
            return None
        job = env.get("NCCL4PY_TRACE_JOB") or f"nccl.run-{token[:12]}"
        folder, created = env.get("NCCL4PY_TRACE_DIR"), False
        if not folder:
            folder, created = tempfile.mkdtemp(prefix=f"nccl4py-trace-{job}-"), True
        env["NCCL4PY_TRACE_JOB"], env["NCCL4PY_TRACE_DIR"] = job, folder
        return cls(folder, job, created, env.get("NCCL4PY_TRACE_SIGNAL", "").strip() != "0")

    def _file(self, rank: int) -> str:
        return os.path.join(self.folder, f"rank{rank}.jsonl")

    def collect(self, procs: list, ended: dict, reason: str) -> None:
        """Asks every rank still running to dump, waits for their files (at most DUMP_WAIT_S), and
        writes launcher.json: how each rank had ended before the launcher stepped in."""
        before = dict(ended)  # rank -> (returncode, wall time)
        asked = {}
        start = time.time()
        for rank, p in enumerate(procs):
            if rank in before or p.poll() is not None or not self.signal_ok:
                continue
            try:
                os.kill(p.pid, signal.SIGUSR1)
                asked[rank] = p
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + DUMP_WAIT_S
        while asked and time.monotonic() < deadline:
            for rank, p in list(asked.items()):
                try:
                    fresh = os.stat(self._file(rank)).st_mtime >= start - 0.01
                except OSError:
                    fresh = False
                if fresh or p.poll() is not None:
                    del asked[rank]
            time.sleep(POLL_S)
        ranks = []
        for rank, p in enumerate(procs):
            info = {"rank": rank, "pid": p.pid}
            if rank in before:
                code, wall = before[rank]
                info.update(_describe(code), wall=wall)
            else:
                info.update(state="running", code=None, signal=None, wall=None)
            ranks.append(info)
        record = {"format": LAUNCH_FORMAT, "version": VERSION, "job": self.job, "world_size": len(procs),
                  "reason": reason, "wall": time.time(), "ranks": ranks}
        tmp = os.path.join(self.folder, f".{LAUNCH_FILE}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.replace(tmp, os.path.join(self.folder, LAUNCH_FILE))
        except OSError:
            pass  # the verdict goes on without it, saying how the ranks ended is not known

    def verdict_lines(self) -> list[str]:
        """The verdict to print under the failure line (never raises)."""
        from nccl.trace import TraceInputError, analyze

        head = f"flight recorder: python -m nccl.trace {self.folder}"
        try:
            report = analyze(self.folder, self.job)
        except TraceInputError:
            if self.created:  # nothing to read there: the folder the launcher made goes
                try:
                    os.unlink(os.path.join(self.folder, LAUNCH_FILE))
                    os.rmdir(self.folder)
                except OSError:
                    pass
            return ["flight recorder: no rank wrote a dump (no communicator was created, or recording is off)"]
        except Exception as exc:  # the verdict is advice: a bug in it must not hide the failure
            return [f"{head}: the verdict failed ({type(exc).__name__}: {exc})"]
        return [f"{head}", f"  verdict: {report.verdict}"] + [f"  also: {f.text}" for f in report.findings[1:4]]

    def finish(self) -> None:
        """After a run that needed no verdict: the folder the launcher made goes if it is empty."""
        if self.created:
            try:
                os.rmdir(self.folder)
            except OSError:
                pass  # a rank wrote a dump (dump_trace): it stays
