"""python -m nccl.run: start N ranks of a Python program on this machine.

    python -m nccl.run -n N [options] script.py [args...]
    python -m nccl.run -n N [options] -m module [args...]

``--help`` lists the options; docs/api/launcher.md says what the launcher does and how: the
ranks' environment (torch's env:// variables included), their output, what it prints when a rank
fails or waits too long, the flight recorder's verdict, and how nothing a rank starts outlives
the launcher (a child subreaper, and a guard process for a launcher that is itself killed:
nccl/_run_guard.py).
"""

import argparse
import ctypes
import os
import socket
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass

from nccl._launch import LAUNCHER_NAME, LAUNCHER_VARIABLE, PLAIN_FD_VARIABLE
from nccl._run_guard import GRACE_S, TOKEN_VARIABLE, descendants, living, marked, process_table, stop
from nccl._run_output import WRITE_LOCK, Output
from nccl._run_trace import WAIT_VARIABLE, LaunchTrace

__all__ = ["main", "parse_args", "UNIQUE_ID_VARIABLE", "PLAIN_FD_VARIABLE"]

UNIQUE_ID_VARIABLE = "NCCL4PY_UNIQUE_ID"
PROG = LAUNCHER_NAME
REAP_EVERY_S = 1.0  # how often orphans that ended under the launcher are reaped while ranks run
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
DEFAULT_WAIT_WARNING_S = 30.0
# A rank that fails with one of these waited for another: its failure is not where the fault is.
WAITING = frozenset({"NCCLTimeout"})

EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_INTERRUPT = 130


class UsageError(Exception):
    pass


# ---- the command line ----

def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _seconds(text, zero=False):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value > 0 or zero and value == 0) or value == float("inf"):
        what = "a number of seconds, 0 or more" if zero else "a positive number of seconds"
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def _ranks(text):
    """'0', '0,2', '1-3,5' -> a set of ranks."""
    out = set()
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.isdigit() or dash and not hi.isdigit():
            raise argparse.ArgumentTypeError(f"must be ranks such as 0 or 0,2-3, got {text!r}")
        out.update(range(int(lo), int(hi if dash else lo) + 1))
    return out


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as UsageError, so that main() prints them as one line."""

    def error(self, message):
        raise UsageError(message)


_VALUE_OPTIONS = set()  # the options that take a value (the split below needs to know)


def _option(group, *flags, **kwargs):
    if kwargs.get("action") is None:
        _VALUE_OPTIONS.update(flags)
    group.add_argument(*flags, **kwargs)


def _parser():
    p = _Parser(prog=f"python -m {PROG}", allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
                usage="%(prog)s -n N [options] (script.py | -m module) [args ...]",
                description="Start N ranks of a Python program on this machine; each gets RANK, WORLD_SIZE, "
                            "LOCAL_RANK,\nLOCAL_WORLD_SIZE and NCCL4PY_UNIQUE_ID (nccl.core.Communicator.from_env "
                            "reads them).",
                epilog="exit status: 0 when every rank exits 0; the first failed rank's status (128+N for "
                       "signal N);\n124 on --timeout; 130 on Ctrl-C; 2 for bad arguments. More: "
                       "docs/api/launcher.md")
    p.add_argument("script", help="the program: a Python file, or a module with -m")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    _option(p, "-n", "--nranks", dest="nranks", metavar="N", type=_positive_int,
            help="how many ranks to start (also -np, --nproc-per-node)")
    for alias in ("-np", "--nproc-per-node", "--nproc_per_node"):  # mpirun's and torchrun's spellings
        _option(p, alias, dest="nranks", type=_positive_int, help=argparse.SUPPRESS)
    _option(p, "-m", "--module", action="store_true", help="run the program as a module (python -m)")
    _option(p, "--timeout", metavar="S", type=_seconds, help="stop every rank after S seconds (exit status 124)")
    _option(p, "--wait-warning", metavar="S", type=lambda t: _seconds(t, zero=True),
            help="once a call has waited S seconds, say for which rank(s) "
                 f"(default ${WAIT_VARIABLE}, else {DEFAULT_WAIT_WARNING_S:g}; 0: never)")
    out = p.add_argument_group("output")
    _option(out, "--no-prefix", dest="prefix", action="store_false",
            help='copy the ranks\' lines without the "[rank] " prefix')
    _option(out, "--log-dir", metavar="DIR",
            help="also write each rank's stdout to DIR/rankR.out and its stderr to DIR/rankR.err")
    _option(out, "--local-ranks-filter", metavar="RANKS", type=_ranks,
            help="show only these ranks' output, e.g. 0 or 0,2-3 (--log-dir still gets every rank's)")
    return p


@dataclass
class Options:
    """What the command line asks for."""

    nranks: int
    command: list  # after the interpreter: [script, args...] or ["-m", module, args...]
    timeout: float = None
    prefix: bool = True
    log_dir: str = None
    shown: set = None  # ranks whose output reaches the console; None: every rank
    wait_warning: float = DEFAULT_WAIT_WARNING_S


def _split(argv):
    """(the launcher's arguments, the program and its arguments): the program starts at the first
    argument that is neither an option nor an option's value, or after "--"."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return argv[:i], argv[i + 1:]
        if not arg.startswith("-") or arg == "-":
            return argv[:i], argv[i:]
        i += 2 if arg in _VALUE_OPTIONS else 1
    return argv, []


def parse_args(argv, environ=None):
    """The Options of a command line; UsageError for anything wrong (checked before any rank starts)."""
    env = os.environ if environ is None else environ
    parser = _parser()
    ours, program = _split(list(argv))
    ns = parser.parse_args(ours + (["--"] if program[:1] and program[0].startswith("-") else []) + program[:1])
    if ns.nranks is None:
        raise UsageError("-n N (the number of ranks) is required")
    if not ns.module and not os.path.isfile(ns.script):
        raise UsageError(f"script not found: {ns.script}")
    shown = ns.local_ranks_filter
    beyond = sorted(shown - set(range(ns.nranks))) if shown is not None else []
    if beyond:
        raise UsageError(f"--local-ranks-filter names rank {beyond[0]}, but the ranks are 0 to {ns.nranks - 1}")
    if ns.log_dir is not None:
        try:
            os.makedirs(ns.log_dir, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--log-dir {ns.log_dir}: {exc.strerror or exc}") from None
    wait = ns.wait_warning
    if wait is None:
        text = env.get(WAIT_VARIABLE, "").strip()
        try:
            wait = _seconds(text, zero=True) if text else DEFAULT_WAIT_WARNING_S
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"{WAIT_VARIABLE} {exc}") from None
    command = (["-m", ns.script] if ns.module else [ns.script]) + program[1:]
    return Options(ns.nranks, command, ns.timeout, ns.prefix, ns.log_dir, shown, wait)


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


def _say(text):
    """One line of the launcher's own on stderr."""
    with WRITE_LOCK:
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


def describe(code):
    """How a rank ended, from its Popen return code."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit code {code}"


class _Stop(Exception):
    """Raised by the signal handler to leave the wait."""


class _Launch:
    """One launch: the ranks, their output, the signals that stop them, and the report."""

    HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, opts, env, token, trace):
        self.opts, self.env, self.token, self.trace = opts, env, token, trace
        self.events = queue.Queue()  # (rank, returncode) as ranks exit
        self.ended = {}  # rank -> (returncode, wall time)
        self.stop_signal = []
        self.procs = []
        self.stopping = None  # wall time the launcher began to stop the ranks
        self.output = Output(sys.stdout.buffer, sys.stderr.buffer, opts.prefix, opts.shown, opts.log_dir)

    # While ranks start and while we clean up, a signal is only recorded: an exception inside
    # Popen could lose a started child, and cleanup must run to the end. While we wait, it
    # interrupts the wait (the handler runs in this thread; raising is how it leaves Queue.get
    # safely, as KeyboardInterrupt does; taking the queue's lock from the handler could deadlock).
    def _record(self, signum, frame):
        self.stop_signal.append(signum)

    def _interrupt(self, signum, frame):
        self.stop_signal.append(signum)
        if len(self.stop_signal) == 1:  # only the first one: a second must not escape the except below
            raise _Stop()

    def _handle(self, handler):
        for sig in self.HANDLED:
            signal.signal(sig, handler)

    def run(self):
        """Runs the ranks; returns the launcher's exit status."""
        previous = {s: signal.getsignal(s) for s in self.HANDLED}
        self._handle(self._record)
        status, verdict = 0, False
        if not _become_subreaper():
            _say(f"{PROG}: warning: this kernel refuses PR_SET_CHILD_SUBREAPER; a rank's child that leaves "
                 f"its session is stopped only while it carries {TOKEN_VARIABLE}")
        guard = _Guard(self.token)
        own = {guard.proc.pid}  # the children our Popen objects reap
        watch = None  # the report of calls that wait too long (nccl/_run_trace.py)
        try:
            self._start_ranks(guard, own)
            watch = self.trace.watch(self.procs, self.opts.wait_warning, _say) if self.trace else None
            status = self._wait(own)
            if watch is not None:
                watch.stop()
            if self.stop_signal:
                status = self._interrupted()
            elif status != 0 and self.trace is not None:
                verdict = True
                self.trace.collect(self.procs, self.ended, "timeout" if status == EXIT_TIMEOUT else "failed")
        finally:
            if watch is not None:
                watch.stop()  # (again, if an error skipped the first: it says nothing once stopped)
            # Everything the ranks started is stopped, on success too: nothing a rank started
            # outlives the launcher.
            self.stopping = time.time()
            left = stop(lambda: _leftovers(own, guard.proc.pid, self.token))
            if left:
                _say(f"{PROG}: process(es) {', '.join(map(str, sorted(left)))} survived SIGKILL")
            for p in self.procs:
                if p.pid not in left:
                    p.wait()
            guard.done()
            self.output.finish()
            self._report(status, verdict)  # while signals are only recorded: a second Ctrl-C does not cut it short
            for s, h in previous.items():
                signal.signal(s, h)
        return status

    def _start_ranks(self, guard, own):
        for rank in range(self.opts.nranks):
            if self.stop_signal:
                break
            plain_r, plain_w = os.pipe()
            e = dict(self.env, RANK=str(rank), LOCAL_RANK=str(rank), **{PLAIN_FD_VARIABLE: str(plain_w)})
            try:
                p = subprocess.Popen([sys.executable, *self.opts.command], env=e, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                     pass_fds=(plain_w,))
            except BaseException:
                os.close(plain_r)
                raise
            finally:
                os.close(plain_w)
            self.procs.append(p)
            own.add(p.pid)
            guard.started(p.pid)
            self.output.add_rank(rank, p.stdout, p.stderr, os.fdopen(plain_r, "rb", buffering=0))
            threading.Thread(target=self._waiter, args=(rank, p), daemon=True, name=f"{PROG}-rank{rank}-wait").start()

    def _waiter(self, rank, proc):
        """A rank's waiter: its exit status and when it came, to the launch's queue."""
        code = proc.wait()
        self.ended[rank] = (code, time.time())
        self.events.put((rank, code))

    def _wait(self, own):
        """Waits for the ranks (reaping orphans meanwhile) until all exited, one failed, --timeout
        expired or a signal came; the exit status (0, the failed rank's, or EXIT_TIMEOUT)."""
        timeout = self.opts.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        running = set(range(len(self.procs)))
        try:
            self._handle(self._interrupt)
            while running and not self.stop_signal:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    _say(f"{PROG}: timeout after {timeout:g} s; rank(s) {', '.join(map(str, sorted(running)))} "
                         f"still running; stopping all ranks")
                    return EXIT_TIMEOUT
                try:
                    rank, code = self.events.get(timeout=REAP_EVERY_S if left is None else min(left, REAP_EVERY_S))
                except queue.Empty:
                    _reap_orphans(process_table(), own)
                    continue
                running.discard(rank)
                if code != 0:
                    others = len(running)
                    _say(f"{PROG}: rank {rank} failed ({describe(code)})"
                         + (f"; stopping the other {others} rank(s)" if others else ""))
                    return code if code > 0 else 128 - code
            return 0
        except _Stop:
            return 0
        finally:
            self._handle(self._record)

    def _interrupted(self):
        """Ctrl-C, SIGTERM or SIGHUP: the ranks' output stops here, one line says why, no verdict."""
        self.output.silence()
        sig = self.stop_signal[0]
        if sig == signal.SIGINT:
            _say(f"{PROG}: interrupted; stopping all ranks")
            return EXIT_INTERRUPT
        _say(f"{PROG}: {signal.Signals(sig).name} received; stopping all ranks")
        return 128 + sig

    def _report(self, status, verdict):
        """After the ranks are gone: the verdict and the root cause of a failure, or the trace
        folder's cleanup."""
        if self.trace is not None:
            if verdict:
                for line in self.trace.verdict_lines():
                    _say(f"{PROG}: {line}")
            elif self.stop_signal:
                self.trace.discard()
            else:
                self.trace.finish()
        if status not in (0, EXIT_TIMEOUT) and not self.stop_signal:
            for line in root_cause(self.failures(), self.output.errors, self.opts.log_dir):
                _say(f"{PROG}: {line}")

    def failures(self):
        """[(wall time, rank, return code)] of the ranks that failed, in the order they ended: a
        non-zero exit, a signal before the launcher stopped the ranks, or a traceback (the
        launcher's SIGTERM may end a rank while it exits after one)."""
        return sorted((wall, rank, code) for rank, (code, wall) in self.ended.items()
                      if code > 0 or code < 0 and (wall < self.stopping or rank in self.output.errors))


def root_cause(failures, errors, log_dir=None):
    """The summary under a failed launch (docs/api/launcher.md#when-a-rank-fails): the first rank
    whose failure is not a consequence of another's (NCCLRemoteError) nor a wait for another
    (NCCLTimeout), else the first rank: its exception line and where it was raised; then the
    others, one line per kind."""
    from nccl.trace._verdict import ranks_text

    if not failures:
        return []

    def consequence(rank):
        return rank in errors and (errors[rank].consequential or errors[rank].type_name in WAITING)

    root = next((f for f in failures if not consequence(f[1])), failures[0])
    _, rank, code = root
    error = errors.get(rank)
    head = f"root cause (first failure): rank {rank} ({describe(code)})"
    if error is None:
        head += "; no Python traceback on its stderr" if code > 0 else ""
        lines = [head]
    else:
        lines = [f"{head}: {error.exception}"] + ([f"  raised at {error.site}"] if error.site else [])
        if error.consequential or error.type_name in WAITING:
            why = "a wait for another rank" if error.type_name in WAITING else "a consequence of another rank's failure"
            lines.append(f"  ({why}: the flight recorder's verdict above says which rank, and where it was)")
    if log_dir is not None:
        lines.append(f"  its whole output: {os.path.join(log_dir, f'rank{rank}.err')}")
    others = {}
    for _, r, c in failures:
        if r == rank:
            continue
        e = errors.get(r)
        key = (f"{e.type_name} (a consequence; tracebacks folded above)" if e is not None and e.consequential
               else f"{describe(c)}" + (f": {e.exception}" if e is not None else ""))
        others.setdefault(key, []).append(r)
    lines += [f"  then {ranks_text(rs)} failed: {what}" for what, rs in others.items()]
    return lines


def _torch_rendezvous(env):
    """MASTER_ADDR and MASTER_PORT for torch.distributed's env:// init, those env lacks: the
    loopback address, and a port free now (torch's rank 0 binds it when the program starts)."""
    extra = {} if env.get("MASTER_ADDR") else {"MASTER_ADDR": "127.0.0.1"}
    if not env.get("MASTER_PORT"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            extra["MASTER_PORT"] = str(s.getsockname()[1])
    return extra


def launch(opts, env=None):
    """Runs a launch; returns the launcher's exit status."""
    try:
        uid, extra, notice = create_unique_id()
    except RuntimeError as exc:  # no library loads: NotSupportedError lists the attempts
        _say(f"{PROG}: cannot create the unique id: " + "\n".join(str(exc).strip().splitlines()))
        return 1
    if notice:
        _say(notice)
    token = secrets.token_hex(16)
    base = dict(os.environ if env is None else env)
    base.update(extra)
    base.update(_torch_rendezvous(base))
    base.update({
        "WORLD_SIZE": str(opts.nranks),
        "LOCAL_WORLD_SIZE": str(opts.nranks),
        UNIQUE_ID_VARIABLE: uid.hex(),
        LAUNCHER_VARIABLE: PROG,
        TOKEN_VARIABLE: token,
        WAIT_VARIABLE: f"{opts.wait_warning:g}",
        "PYTHONUNBUFFERED": "1",
    })
    trace = LaunchTrace.setup(base, token, _say)
    return _Launch(opts, base, token, trace).run()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
    except UsageError as exc:
        print(f"{PROG}: error: {exc} (python -m {PROG} --help lists the options)", file=sys.stderr)
        return EXIT_USAGE
    status = launch(opts)
    # The job is over: a Ctrl-C still arriving (a user pressing it again) must not turn the exit
    # into a KeyboardInterrupt while the interpreter shuts down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


if __name__ == "__main__":
    sys.exit(main())
