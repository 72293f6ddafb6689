"""python -m nccl.run: start N ranks of a Python program on this machine.

    python -m nccl.run -n N [--timeout S] script.py [args...]
    python -m nccl.run -n N [--timeout S] -m module [args...]

The launcher creates one NCCL unique id in its own process (the id's bootstrap root lives here,
and this process outlives the ranks), then starts N copies of the program, each in its own
process group, with these variables in the environment:

    RANK, WORLD_SIZE               this rank and the number of ranks
    LOCAL_RANK, LOCAL_WORLD_SIZE   the same (one machine)
    NCCL4PY_UNIQUE_ID              the id, 256 hex digits (nccl.core.Communicator.from_env reads it)
    NCCL4PY_LAUNCHER               "nccl.run"
    NCCL4PY_RUN_TOKEN              random, one per launch (how the guard recognises the ranks)

Each line a rank writes is copied to the launcher's stdout/stderr prefixed with ``[rank] ``.
When a rank fails (non-zero exit, or killed by a signal) or ``--timeout`` expires, the other
ranks are stopped: SIGTERM to each rank's process group, then SIGKILL after a grace period.
Ctrl-C (SIGINT), SIGTERM and SIGHUP to the launcher do the same. A launcher that is itself killed
(SIGKILL, the OOM killer) cannot do it, so a small guard process (nccl/_run_guard.py, in its own
session) watches a pipe from the launcher and stops every rank when the pipe closes without the
launcher saying it is done. Exit status: 0 when every rank exited 0; the failed rank's exit
status (128 + signal for a signal); 124 on timeout; 130 on Ctrl-C; 2 for bad arguments.

Without a GPU library the ranks run on the bundled host backend: the launcher says so once and
sets NCCL_LIBRARY=host for the ranks, so they do not each repeat the notice.
"""

import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
import warnings

from nccl._run_guard import TOKEN_VARIABLE

__all__ = ["main", "UNIQUE_ID_VARIABLE"]

UNIQUE_ID_VARIABLE = "NCCL4PY_UNIQUE_ID"
PROG = "nccl.run"
KILL_GRACE_S = 3.0  # between SIGTERM and SIGKILL
READER_JOIN_S = 2.0  # how long output still drains after the ranks are gone
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
    if flavour == "host" and not os.environ.get("NCCL_LIBRARY", "").strip():
        # The ranks choose the same library without repeating the notice each.
        extra["NCCL_LIBRARY"] = "host"
    return uid, extra, notice


class _Output:
    """Copies one rank's pipe to one of our streams, each line prefixed with the rank."""

    lock = threading.Lock()

    def __init__(self, rank, pipe, stream):
        self.prefix = f"[{rank}] ".encode()
        self.pipe, self.stream = pipe, stream
        self.thread = threading.Thread(target=self._pump, name=f"{PROG}-rank{rank}-output", daemon=True)
        self.thread.start()

    def _pump(self):
        try:
            for line in iter(self.pipe.readline, b""):
                if not line.endswith(b"\n"):
                    line += b"\n"
                with self.lock:
                    try:
                        self.stream.write(self.prefix + line)
                        self.stream.flush()
                    except (BrokenPipeError, ValueError, OSError):
                        pass  # our own stdout went away; keep draining so the rank never blocks
        finally:
            self.pipe.close()


def _say(text):
    with _Output.lock:
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(pgid):
    return _signal_group(pgid, 0)


def stop_groups(pgids, grace=KILL_GRACE_S):
    """SIGTERM to every live process group, then SIGKILL to whatever is left after grace."""
    live = [g for g in pgids if _signal_group(g, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        # Waiting on groups, which need not be our children: there is no blocking wait for that.
        time.sleep(0.05)
        live = [g for g in live if _group_alive(g)]
    for g in live:
        _signal_group(g, signal.SIGKILL)


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
            self.proc.wait(timeout=KILL_GRACE_S)
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


def _wait(events, running, stop_signal, deadline, timeout):
    """Waits for the ranks; returns the exit status (0, a failed rank's, or EXIT_TIMEOUT)."""
    while running and not stop_signal:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            ranks = ", ".join(str(r) for r in sorted(running))
            _say(f"{PROG}: timeout after {timeout:g} s; rank(s) {ranks} still running; stopping all ranks")
            return EXIT_TIMEOUT
        try:
            rank, code = events.get(timeout=left)
        except queue.Empty:
            continue
        running.discard(rank)
        if code != 0:
            others = len(running)
            _say(f"{PROG}: rank {rank} failed ({_describe(code)})"
                 + (f"; stopping the other {others} rank(s)" if others else ""))
            return code if code > 0 else 128 - code
    return 0


def launch(nranks, command, timeout=None, env=None):
    """Runs the ranks; returns the launcher's exit status. ``command`` follows the interpreter."""
    uid, extra, notice = create_unique_id()
    if notice:
        _say(notice)
    token = secrets.token_hex(16)
    base = dict(os.environ if env is None else env)
    base.update(extra)
    base.update({
        "WORLD_SIZE": str(nranks),
        "LOCAL_WORLD_SIZE": str(nranks),
        UNIQUE_ID_VARIABLE: uid.hex(),
        "NCCL4PY_LAUNCHER": PROG,
        TOKEN_VARIABLE: token,
        "PYTHONUNBUFFERED": "1",
    })

    events = queue.Queue()  # (rank, returncode) as ranks exit
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
    procs, outputs = [], []
    status = 0
    guard = _Guard(token)
    try:
        for rank in range(nranks):
            if stop_signal:
                break
            e = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
            p = subprocess.Popen([sys.executable, *command], env=e, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            procs.append(p)
            guard.started(p.pid)
            outputs.append(_Output(rank, p.stdout, sys.stdout.buffer))
            outputs.append(_Output(rank, p.stderr, sys.stderr.buffer))
            threading.Thread(target=lambda r=rank, p=p: events.put((r, p.wait())), daemon=True,
                             name=f"{PROG}-rank{rank}-wait").start()
        deadline = None if timeout is None else time.monotonic() + timeout
        running = set(range(len(procs)))
        try:
            for sig in handled:
                signal.signal(sig, interrupt)
            status = _wait(events, running, stop_signal, deadline, timeout)
            for sig in handled:
                signal.signal(sig, record)
        except _Stop:
            for sig in handled:
                signal.signal(sig, record)
        if stop_signal:
            name = signal.Signals(stop_signal[0]).name
            _say(f"{PROG}: {name} received; stopping all ranks")
            status = EXIT_INTERRUPT if stop_signal[0] == signal.SIGINT else 128 + stop_signal[0]
    finally:
        # Every rank's process group is stopped, on success too: nothing a rank started outlives
        # the launcher.
        stop_groups([p.pid for p in procs])
        for p in procs:
            try:
                p.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(p.pid, signal.SIGKILL)
                p.wait()
        guard.done()
        for o in outputs:
            o.thread.join(READER_JOIN_S)
        for s, h in previous.items():
            signal.signal(s, h)
    return status


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        nranks, timeout, command = parse_args(argv)
    except UsageError as exc:
        print(f"{PROG}: error: {exc} ({USAGE})", file=sys.stderr)
        return EXIT_USAGE
    try:
        return launch(nranks, command, timeout)
    except RuntimeError as exc:  # no library loads: NotSupportedError lists the attempts
        first = str(exc).strip().splitlines()
        _say(f"{PROG}: cannot create the unique id: " + "\n".join(first))
        return 1


if __name__ == "__main__":
    sys.exit(main())
