"""python -m nccl.run and the flight recorder (docs/api/trace.md#the-launcher): every rank writes
its dumps to one folder of the launch; when a rank fails or ``--timeout`` expires, the launcher
asks the ranks still running for a dump (SIGUSR1), waits a bounded time, records how each rank
ended (``launcher.json``) and prints the verdict of ``nccl.trace`` under the failure line.

The folder (unless NCCL4PY_TRACE_DIR names one) is a new one under the user's own trace folder,
``$TMPDIR/nccl4py-trace-uid<uid>`` (the one the recorder itself uses without a job id: mode 0700,
refused if another user owns it). A run that ends well removes its folder; a run stopped by a
signal too. The folders of failed runs are kept, the newest NCCL4PY_TRACE_KEEP (default 10): each
launch removes the older ones, except those whose launcher still runs.

While the ranks run, a call that has waited NCCL4PY_WAIT_WARNING seconds makes its rank write a
dump with reason "wait" (src/ext/trace/trace_dump.c); the launcher's watch sees it, asks every rank for
a dump and its Python stacks, and prints one line per such call: who waits, in which call, for
which ranks, and where those are (nccl.trace._waits)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import tempfile
import threading
import time

from nccl.trace._files import LAUNCH_FILE, LAUNCH_FORMAT, VERSION
from nccl.trace._stacks import path_of as stacks_path_of

# Seconds a rank may wait in one call before the launcher says for whom (docs/api/launcher.md).
WAIT_VARIABLE = "NCCL4PY_WAIT_WARNING"
WATCH_EVERY_S = 0.5  # how often the launcher looks for a rank's "wait" dump
KEEP_VARIABLE = "NCCL4PY_TRACE_KEEP"
DEFAULT_KEEP = 10
PID_FILE = ".launcher"  # in a launch's folder: the launcher's pid and start time (the retention's key)
DUMP_WAIT_S = 5.0  # how long the ranks asked for a dump get to write it
POLL_S = 0.05


def _newer(path: str, start: float) -> bool:
    """Whether path was written since start (a wall time)."""
    try:
        return os.stat(path).st_mtime >= start - 0.01
    except OSError:
        return False


def _describe(code: int) -> dict:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return {"state": "killed", "code": None, "signal": name}
    return {"state": "exited", "code": code, "signal": None}


def user_folder(env: dict) -> str:
    """This user's trace folder: where the recorder writes without a job id, and where the
    launcher makes one folder per run."""
    return os.path.join(env.get("TMPDIR") or "/tmp", f"nccl4py-trace-uid{os.geteuid()}")


def _private(path: str) -> str | None:
    """Makes path a folder of this user's alone (mode 0700) if it is missing; None when it is one,
    else what is wrong with it."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot be created ({exc.strerror or exc})"
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != os.geteuid():
        return f"belongs to uid {st.st_uid}"
    if st.st_mode & 0o077:
        return f"is open to other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _keep(env: dict, say) -> int:
    text = env.get(KEEP_VARIABLE, "").strip()
    if not text:
        return DEFAULT_KEEP
    if text.isdigit() and int(text) >= 1:
        return int(text)
    say(f"nccl.run: warning: {KEEP_VARIABLE}={text} is not a count of 1 or more; keeping {DEFAULT_KEEP}")
    return DEFAULT_KEEP


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def prune(base: str, keep: int) -> list[str]:
    """Removes the launch folders in base beyond the newest `keep` (by their launcher's start
    time), except those whose launcher still runs; returns the removed paths. A folder without
    the launcher's PID_FILE is not a launch's and stays."""
    runs = []
    with os.scandir(base) as entries:
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            try:
                with open(os.path.join(entry.path, PID_FILE)) as f:
                    pid, started = f.read().split()
                runs.append((float(started), entry.path, int(pid)))
            except (OSError, ValueError):
                continue
    removed = []
    for _, path, pid in sorted(runs, reverse=True)[keep:]:
        if not _running(pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _job_folder(base: str, job: str) -> str:
    """A new folder for this run in base, named after the job (characters other than letters,
    digits, '-', '_' and '.' become '_'), with the launcher's PID_FILE in it."""
    name = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in job)
    folder = tempfile.mkdtemp(prefix=f"{name}-", dir=base) if os.path.lexists(os.path.join(base, name)) else \
        os.path.join(base, name)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    with open(os.path.join(folder, PID_FILE), "w") as f:
        f.write(f"{os.getpid()} {time.time():.6f}\n")
    return folder


class LaunchTrace:
    """The launch's trace folder and job id, set in the ranks' environment by ``setup``."""

    def __init__(self, folder: str, job: str, created: bool, signal_ok: bool, base: str | None = None,
                 keep: int = DEFAULT_KEEP):
        self.folder, self.job, self.created, self.signal_ok = folder, job, created, signal_ok
        self.base, self.keep = base, keep

    @classmethod
    def setup(cls, env: dict, token: str, say) -> "LaunchTrace | None":
        """Chooses the folder and the job id (the user's NCCL4PY_TRACE_DIR / NCCL4PY_TRACE_JOB when
        set) and puts them in `env`; None when recording is off (NCCL4PY_TRACE_BUFFER=0). `say`
        prints a line of the launcher's."""
        if env.get("NCCL4PY_TRACE_BUFFER", "").strip() == "0":
            return None
        job = env.get("NCCL4PY_TRACE_JOB") or f"nccl.run-{token[:12]}"
        signal_ok = env.get("NCCL4PY_TRACE_SIGNAL", "").strip() != "0"
        folder = env.get("NCCL4PY_TRACE_DIR")
        base, keep = None, DEFAULT_KEEP
        if folder:
            trace = cls(folder, job, False, signal_ok)
        else:
            base, keep = user_folder(env), _keep(env, say)
            problem = _private(base)
            if problem is None:
                prune(base, keep - 1)
                folder = _job_folder(base, job)
            else:
                say(f"nccl.run: warning: the trace folder {base} {problem}; this run's goes to a new temporary folder")
                folder, base = tempfile.mkdtemp(prefix=f"nccl4py-trace-{job}-"), None
            trace = cls(folder, job, True, signal_ok, base, keep)
        env["NCCL4PY_TRACE_JOB"], env["NCCL4PY_TRACE_DIR"] = job, folder
        return trace

    def _file(self, rank: int) -> str:
        return os.path.join(self.folder, f"rank{rank}.jsonl")

    def ask(self, procs: list, ranks) -> None:
        """Sends SIGUSR1 to each of `ranks` still running and waits until each has rewritten its
        dump and the Python stacks beside it (docs/api/trace.md#python-stacks), or exited; at most
        DUMP_WAIT_S."""
        asked = {}
        start = time.time()
        for rank in ranks:
            p = procs[rank]
            if p.poll() is not None or not self.signal_ok:
                continue
            try:
                os.kill(p.pid, signal.SIGUSR1)
                asked[rank] = p
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + DUMP_WAIT_S
        while asked and time.monotonic() < deadline:
            for rank, p in list(asked.items()):
                files = (self._file(rank), stacks_path_of(self._file(rank)))
                if p.poll() is not None or all(_newer(f, start) for f in files):
                    del asked[rank]
            time.sleep(POLL_S)

    def collect(self, procs: list, ended: dict, reason: str) -> None:
        """Asks every rank still running to dump (ask), and writes launcher.json: how each rank
        had ended before the launcher stepped in."""
        before = dict(ended)  # rank -> (returncode, wall time)
        self.ask(procs, [rank for rank in range(len(procs)) if rank not in before])
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
            self.discard()  # nothing to read there: the folder the launcher made goes
            return ["flight recorder: no rank wrote a dump (no communicator was created, or recording is off)"]
        except Exception as exc:  # the verdict is advice: a bug in it must not hide the failure
            return [f"{head}: the verdict failed ({type(exc).__name__}: {exc})"]
        lines = [head, f"  verdict: {report.verdict}"] + [f"  also: {f.text}" for f in report.findings[1:4]]
        if self.base is not None:
            lines.append(f"  (the folders of the newest {self.keep} failed runs are kept in {self.base}; "
                         f"{KEEP_VARIABLE})")
        return lines

    def finish(self) -> None:
        """After a run that needed no verdict: the folder the launcher made goes if no rank wrote
        a file there (dump_trace)."""
        if not self.created:
            return
        try:
            if set(os.listdir(self.folder)) <= {PID_FILE}:
                shutil.rmtree(self.folder, ignore_errors=True)
        except OSError:
            pass

    def discard(self) -> None:
        """The folder the launcher made goes, whatever is in it (a run stopped by a signal)."""
        if self.created:
            shutil.rmtree(self.folder, ignore_errors=True)

    def watch(self, procs: list, seconds: float, say) -> "_Watch | None":
        """Starts the watch for calls that wait `seconds` or more (None for 0: never)."""
        return _Watch(self, procs, seconds, say) if seconds > 0 else None


def _reason(path: str) -> str | None:
    """The "reason" in a dump's header line."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.readline()).get("reason")
    except (OSError, ValueError, AttributeError):
        return None


class _Watch:
    """A thread that reports the calls that wait too long, one line each (docs/api/launcher.md)."""

    def __init__(self, trace: LaunchTrace, procs: list, seconds: float, say):
        self.trace, self.procs, self.seconds, self.say = trace, procs, seconds, say
        self.seen: dict[int, int] = {}  # rank -> the mtime of its dump last looked at
        self.reported: set = set()  # the Wait keys said
        self.stopped = threading.Event()
        self.failed = False
        self.thread = threading.Thread(target=self._run, name="nccl.run-wait-watch", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(DUMP_WAIT_S + 5.0)

    def _run(self) -> None:
        while not self.stopped.wait(WATCH_EVERY_S):
            waiting = False
            for rank in range(len(self.procs)):
                path = self.trace._file(rank)
                try:
                    mtime = os.stat(path).st_mtime_ns
                except OSError:
                    continue
                if self.seen.get(rank) != mtime:
                    self.seen[rank] = mtime
                    waiting = waiting or _reason(path) == "wait"
            if waiting:
                self._report()

    def _waits(self) -> list:
        from nccl.trace import TraceInputError
        from nccl.trace._files import load
        from nccl.trace._waits import waits

        try:
            return [w for w in waits(load(self.trace.folder, self.trace.job), self.seconds)
                    if w.key not in self.reported]
        except TraceInputError:
            return []

    def _report(self) -> None:
        """A rank wrote a "wait" dump: if its call is not said yet, every rank is asked for a
        fresh dump and its stacks, and each new wait is said."""
        try:
            if not self._waits():
                return
            self.trace.ask(self.procs, range(len(self.procs)))
            for w in self._waits():
                if self.stopped.is_set():
                    return
                self.reported.add(w.key)
                self.say(f"nccl.run: {w.text}")
        except Exception as exc:  # advice: a bug here must not end the launch
            if not self.failed:
                self.failed = True
                self.say(f"nccl.run: the report of a waiting call failed ({type(exc).__name__}: {exc})")
