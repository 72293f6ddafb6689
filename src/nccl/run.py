"""python -m nccl.run: start N ranks of a Python program on this machine.

    python -m nccl.run -n N [--timeout S] script.py [args...]
    python -m nccl.run -n N [--timeout S] -m module [args...]

The launcher creates one NCCL unique id in its own process (the id's bootstrap root lives here,
and this process outlives the ranks), then starts N copies of the program, each in its own
process group, with these variables in the environment:

    RANK, WORLD_SIZE               this rank and the number of ranks
    LOCAL_RANK, LOCAL_WORLD_SIZE   the same (one machine)
    MASTER_ADDR, MASTER_PORT       127.0.0.1 and a free port, unless set: torch's env:// init
                                   (init_process_group) starts its store there
    NCCL4PY_UNIQUE_ID              the id, 256 hex digits (nccl.core.Communicator.from_env reads it)
    NCCL4PY_LAUNCHER               "nccl.run"
    NCCL4PY_RUN_TOKEN              random, one per launch (how the guard recognises the ranks)

Each line a rank writes is copied to the launcher's stdout/stderr prefixed with ``[rank] ``.
When a rank fails (non-zero exit, or killed by a signal) or ``--timeout`` expires, the other
ranks are stopped. Ctrl-C (SIGINT), SIGTERM and SIGHUP to the launcher do the same. On every way
out, success included, nothing a rank started outlives the launcher: the launcher is a child
subreaper (prctl PR_SET_CHILD_SUBREAPER), so a rank's children stay its descendants even when
they leave the rank's session or double-fork, and it sends SIGTERM to every descendant (and to
every process carrying this launch's NCCL4PY_RUN_TOKEN), then SIGKILL after a grace period, until
none is left. The ranks' output pipes are then read to their end without waiting for a holder
outside this tree. A launcher that is itself killed (SIGKILL, the OOM killer) cannot do it, so a
small guard process (nccl/_run_guard.py, in its own session) watches a pipe from the launcher and
stops every rank and everything of theirs when the pipe closes without the launcher saying it is
done. Exit status: 0 when every rank exited 0; the failed rank's exit status (128 + signal for a
signal); 124 on timeout; 130 on Ctrl-C; 2 for bad arguments.

When a rank fails, --timeout expires or Ctrl-C stops the job, the ranks still running are first
asked for their flight-recorder dumps (SIGUSR1), and the verdict of python -m nccl.trace on them
is printed under the failure line (nccl/_run_trace.py, docs/api/trace.md#the-launcher). The ranks
get NCCL4PY_TRACE_DIR (a new folder, removed after a clean run if empty) and NCCL4PY_TRACE_JOB
unless they are set.

A program that takes its rank from MPI (mpi4py) is not a job for this launcher: each rank would
be rank 0 of 1. Such a rank's 1-rank communicator fails with the mpirun command to use instead.

Without a GPU library the ranks run on the bundled host backend: the launcher says so once and
sets NCCL_LIBRARY=host for the ranks, so they do not each repeat the notice.
"""

import ctypes
import os
import socket
import queue
import secrets
import selectors
import signal
import subprocess
import sys
import threading
import time
import warnings

from nccl._launch import LAUNCHER_NAME, LAUNCHER_VARIABLE
from nccl._run_trace import LaunchTrace
from nccl._run_guard import GRACE_S, TOKEN_VARIABLE, descendants, living, marked, process_table, stop

__all__ = ["main", "UNIQUE_ID_VARIABLE"]

UNIQUE_ID_VARIABLE = "NCCL4PY_UNIQUE_ID"
PROG = LAUNCHER_NAME
DRAIN_JOIN_S = 5.0  # how long the last output may take to reach our own stdout/stderr
REAP_EVERY_S = 1.0  # how often orphans that ended under the launcher are reaped while ranks run
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
USAGE = "usage: python -m nccl.run -n N [--timeout S] (script.py | -m module) [args...]"

EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_INTERRUPT = 130


class UsageError(Exception):
    pass


def _positive_int(opt, text):
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise UsageError(f"{opt} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise UsageError(f"{opt} must be a positive integer, got {text!r}")
    return value


def _positive_float(opt, text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"{opt} must be a positive number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{opt} must be a positive number of seconds, got {text!r}")
    return value


def parse_args(argv):
    """(nranks, timeout or None, command list after the interpreter). Raises UsageError.

    Options end at the first argument that is not one of ours: that is the script (or ``-m
    module``), and everything after it belongs to the program."""
    nranks, timeout, command = None, None, None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg in ("-h", "--help"):
            raise SystemExit(_help())
        if name in ("-n", "-np", "--nranks", "--timeout"):
            if eq:
                text = inline
            elif i + 1 < len(argv):
                text = argv[i + 1]
                i += 1
            else:
                raise UsageError(f"{name} needs a value")
            if name == "--timeout":
                timeout = _positive_float(name, text)
            else:
                nranks = _positive_int(name, text)
            i += 1
        elif arg.startswith("-n") and len(arg) > 2 and not arg.startswith("-np"):
            nranks = _positive_int("-n", arg[2:])  # -n4
            i += 1
        elif arg == "-m":
            if i + 1 >= len(argv):
                raise UsageError("-m needs a module name")
            command = ["-m", argv[i + 1], *argv[i + 2:]]
            break
        elif arg == "--":
            if i + 1 < len(argv):
                command = [argv[i + 1], *argv[i + 2:]]
            break
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {arg!r}")
        else:
            command = [arg, *argv[i + 1:]]
            break
    if nranks is None:
        raise UsageError("-n N (the number of ranks) is required")
    if command is None:
        raise UsageError("no script given")
    if command[0] != "-m" and not os.path.isfile(command[0]):
        raise UsageError(f"script not found: {command[0]}")
    return nranks, timeout, command


def _help():
    print(USAGE)
    print(__doc__.split("\n\n", 2)[2].rstrip())
    return 0


def create_unique_id():
    """The id (bytes) from the library this process chooses, and a notice for the ranks' sake.

    Returns (id bytes, extra environment for the ranks, notice or None). The host backend's
    one-time HostBackendWarning is caught here and turned into the launcher's own notice."""
    import nccl.bindings.nccl as b
    from nccl import _ext

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        uid = bytes(b.get_unique_id())
        flavour = b.get_library_flavour()
        path = b.get_library_path()
    notice = None
    for w in caught:
        if issubclass(w.category, b.HostBackendWarning):
            notice = (f"{PROG}: no GPU found; running on the bundled host backend (CPU) "
                      f"at {path}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    extra = {}
    if flavour == "host" and _ext._library_selection()["library"] is None:
        # The ranks choose the same library without repeating the notice each.
        extra["NCCL_LIBRARY"] = "host"
    return uid, extra, notice


_WRITE_LOCK = threading.Lock()  # one line at a time on our stdout/stderr


class _Pump:
    """One thread that copies every rank's pipes to our streams, each line prefixed with the rank.

    ``finish()`` (called once nothing of the launch is left) reads what the pipes still hold
    without waiting for their end: a pipe kept open by a process outside the launch's tree does not
    delay the launcher's exit."""

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        self.lock = threading.Lock()
        self.added, self.finishing = [], False
        self.thread = threading.Thread(target=self._run, name=f"{PROG}-output", daemon=True)
        self.thread.start()

    def add(self, rank, pipe, stream):
        """Takes over pipe (a file object) for rank's lines to stream (a binary stream)."""
        with self.lock:
            self.added.append((pipe, [f"[{rank}] ".encode(), stream, b""]))
        os.write(self.wake_w, b"+")

    def finish(self):
        with self.lock:
            self.finishing = True
        os.write(self.wake_w, b".")
        self.thread.join(DRAIN_JOIN_S)  # only our own blocked stdout could hold it up

    def _run(self):
        while True:
            for key, _ in self.selector.select():
                if key.fd != self.wake_r:
                    self._read(key)
                    continue
                os.read(self.wake_r, 4096)
                with self.lock:
                    added, self.added, finishing = self.added, [], self.finishing
                for pipe, state in added:
                    self.selector.register(pipe.fileno(), selectors.EVENT_READ, (pipe, state))
                if finishing:
                    self._drain()
                    return

    def _read(self, key, chunk=65536):
        """One read of a pipe; True while it may hold more."""
        pipe, state = key.data
        try:
            data = os.read(key.fd, chunk)
        except BlockingIOError:
            return False
        if data:
            state[2] += data
            *lines, state[2] = state[2].split(b"\n")
            self._write(state, lines)
            return True
        self._write(state, [state[2]] if state[2] else [])
        self.selector.unregister(key.fd)
        pipe.close()
        return False

    def _drain(self):
        for key in list(self.selector.get_map().values()):
            if key.fd == self.wake_r:
                continue
            os.set_blocking(key.fd, False)
            while self._read(key):
                pass
            if key.fd in self.selector.get_map():  # still open elsewhere: what it held is out
                pipe, state = key.data
                self._write(state, [state[2]] if state[2] else [])
                self.selector.unregister(key.fd)
                pipe.close()
        self.selector.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    @staticmethod
    def _write(state, lines):
        if not lines:
            return
        prefix, stream = state[0], state[1]
        with _WRITE_LOCK:
            try:
                stream.write(b"".join(prefix + line + b"\n" for line in lines))
                stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # our own stdout went away; keep draining so the rank never blocks


def _say(text):
    with _WRITE_LOCK:
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass


def _become_subreaper():
    """Makes this process the reaper of its descendants' orphans, so that a rank's child that
    double-forks or calls setsid stays in the launcher's tree. False where the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _reap_orphans(table, own):
    """Reaps the orphans that ended under this subreaper; own: the pids our Popen objects reap
    (the ranks and the guard)."""
    me = os.getpid()
    for pid, (ppid, _, state, _) in table.items():
        if ppid == me and state == "Z" and pid not in own:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _leftovers(own, guard_pid, token):
    """{pid: start time} of every live process the launch started: this process's descendants
    except the guard, and whatever carries the launch's token."""
    me = os.getpid()
    table = process_table()
    _reap_orphans(table, own)
    found = descendants(table, {me} | marked(token)) - {me} - descendants(table, {guard_pid})
    return living(table, found)


class _Guard:
    """The guard process of this launch (see nccl/_run_guard.py): told each rank's pid, and
    "done" once the launcher has stopped the ranks itself; if the launcher dies first, the guard
    stops them."""

    def __init__(self, token):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_run_guard.py")
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", path, token], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def started(self, pid):
        self._write(f"{pid}\n")

    def done(self):
        self._write("done\n")
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _write(self, text):
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # the guard is gone; the launcher still stops its ranks itself


def _describe(code):
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit code {code}"


class _Stop(Exception):
    """Raised by the signal handler to leave the wait."""


def _wait(events, running, stop_signal, deadline, timeout, own):
    """Waits for the ranks, reaping orphans meanwhile; returns the exit status (0, a failed
    rank's, or EXIT_TIMEOUT)."""
    while running and not stop_signal:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            ranks = ", ".join(str(r) for r in sorted(running))
            _say(f"{PROG}: timeout after {timeout:g} s; rank(s) {ranks} still running; stopping all ranks")
            return EXIT_TIMEOUT
        try:
            rank, code = events.get(timeout=REAP_EVERY_S if left is None else min(left, REAP_EVERY_S))
        except queue.Empty:
            _reap_orphans(process_table(), own)
            continue
        running.discard(rank)
        if code != 0:
            others = len(running)
            _say(f"{PROG}: rank {rank} failed ({_describe(code)})"
                 + (f"; stopping the other {others} rank(s)" if others else ""))
            return code if code > 0 else 128 - code
    return 0


def _torch_rendezvous(env):
    """MASTER_ADDR and MASTER_PORT for torch.distributed's env:// init, those env lacks: the
    loopback address, and a port free now (torch's rank 0 binds it when the program starts)."""
    extra = {} if env.get("MASTER_ADDR") else {"MASTER_ADDR": "127.0.0.1"}
    if not env.get("MASTER_PORT"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            extra["MASTER_PORT"] = str(s.getsockname()[1])
    return extra


def launch(nranks, command, timeout=None, env=None):
    """Runs the ranks; returns the launcher's exit status. ``command`` follows the interpreter."""
    uid, extra, notice = create_unique_id()
    if notice:
        _say(notice)
    token = secrets.token_hex(16)
    base = dict(os.environ if env is None else env)
    base.update(extra)
    base.update(_torch_rendezvous(base))
    base.update({
        "WORLD_SIZE": str(nranks),
        "LOCAL_WORLD_SIZE": str(nranks),
        UNIQUE_ID_VARIABLE: uid.hex(),
        LAUNCHER_VARIABLE: PROG,
        TOKEN_VARIABLE: token,
        "PYTHONUNBUFFERED": "1",
    })
    trace = LaunchTrace.setup(base, token)

    events = queue.Queue()  # (rank, returncode) as ranks exit
    ended = {}  # rank -> (returncode, wall time), for the flight recorder's launcher.json
    stop_signal = []

    # While ranks start and while we clean up, a signal is only recorded: an exception inside
    # Popen could lose a started child, and cleanup must run to the end. While we wait, it
    # interrupts the wait (the handler runs in this thread; raising is how it leaves
    # Queue.get safely, as KeyboardInterrupt does; taking the queue's lock from the handler
    # could deadlock).
    def record(signum, frame):
        stop_signal.append(signum)

    def interrupt(signum, frame):
        stop_signal.append(signum)
        if len(stop_signal) == 1:  # only the first one: a second must not escape the except below
            raise _Stop()

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, record) for s in handled}
    procs = []
    status = 0
    verdict = False  # whether the flight recorder's verdict is printed (a failed rank, --timeout, Ctrl-C)
    if not _become_subreaper():
        _say(f"{PROG}: warning: this kernel refuses PR_SET_CHILD_SUBREAPER; a rank's child that leaves "
             f"its session is stopped only while it carries {TOKEN_VARIABLE}")
    guard = _Guard(token)
    own = {guard.proc.pid}  # the children our Popen objects reap
    pump = _Pump()
    try:
        for rank in range(nranks):
            if stop_signal:
                break
            e = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
            p = subprocess.Popen([sys.executable, *command], env=e, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            procs.append(p)
            own.add(p.pid)
            guard.started(p.pid)
            pump.add(rank, p.stdout, sys.stdout.buffer)
            pump.add(rank, p.stderr, sys.stderr.buffer)
            threading.Thread(target=_watch, args=(rank, p, events, ended), daemon=True,
                             name=f"{PROG}-rank{rank}-wait").start()
        deadline = None if timeout is None else time.monotonic() + timeout
        running = set(range(len(procs)))
        try:
            for sig in handled:
                signal.signal(sig, interrupt)
            status = _wait(events, running, stop_signal, deadline, timeout, own)
            for sig in handled:
                signal.signal(sig, record)
        except _Stop:
            for sig in handled:
                signal.signal(sig, record)
        if stop_signal:
            name = signal.Signals(stop_signal[0]).name
            _say(f"{PROG}: {name} received; stopping all ranks")
            status = EXIT_INTERRUPT if stop_signal[0] == signal.SIGINT else 128 + stop_signal[0]
        verdict = trace is not None and status != 0 and (not stop_signal or stop_signal[0] == signal.SIGINT)
        if verdict:
            trace.collect(procs, ended, "timeout" if status == EXIT_TIMEOUT else
                          "interrupted" if stop_signal else "failed")
    finally:
        # Everything the ranks started is stopped, on success too: nothing a rank started outlives
        # the launcher.
        left = stop(lambda: _leftovers(own, guard.proc.pid, token))
        if left:
            _say(f"{PROG}: process(es) {', '.join(map(str, sorted(left)))} survived SIGKILL")
        for p in procs:
            if p.pid not in left:
                p.wait()
        guard.done()
        pump.finish()
        # while signals are still only recorded: a second Ctrl-C does not cut the verdict short
        if verdict:
            for line in trace.verdict_lines():
                _say(f"{PROG}: {line}")
        elif trace is not None:
            trace.finish()
        for s, h in previous.items():
            signal.signal(s, h)
    return status


def _watch(rank, proc, events, ended):
    """A rank's waiter: its exit status and when it came, to the launch's queue."""
    code = proc.wait()
    ended[rank] = (code, time.time())
    events.put((rank, code))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        nranks, timeout, command = parse_args(argv)
    except UsageError as exc:
        print(f"{PROG}: error: {exc} ({USAGE})", file=sys.stderr)
        return EXIT_USAGE
    try:
        status = launch(nranks, command, timeout)
        # The job is over: a Ctrl-C still arriving (a user pressing it again) must not turn the
        # exit into a KeyboardInterrupt while the interpreter shuts down.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return status
    except RuntimeError as exc:  # no library loads: NotSupportedError lists the attempts
        first = str(exc).strip().splitlines()
        _say(f"{PROG}: cannot create the unique id: " + "\n".join(first))
        return 1


if __name__ == "__main__":
    sys.exit(main())
