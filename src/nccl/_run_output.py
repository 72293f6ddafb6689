"""The ranks' output under ``python -m nccl.run`` (docs/api/launcher.md#output): one thread copies
every rank's pipes, line by line, to the launcher's stdout and stderr, and to the per-rank files
of ``--log-dir``.

* stdout and stderr lines get the ``[rank] `` prefix unless ``--no-prefix``; the lines a rank
  writes to its plain channel (the descriptor in NCCL4PY_RUN_PLAIN_FD, which nccl.bench writes its
  table to) never get one;
* only the ranks of ``--local-ranks-filter`` reach the console; every rank reaches its files;
* a Python traceback on a rank's stderr is held until it is complete, then written in one piece
  (tracebacks of several ranks never interleave). A traceback whose exception is a consequence
  of another rank's failure (``NCCLRemoteError``: a peer died or failed) is folded to one line, its
  exception line and where it was raised; the files keep it whole. Each rank's last traceback is
  kept for the launcher's root-cause summary;
* once the launcher is interrupted (``quiet``), nothing more reaches the console.

``finish()`` (called once nothing of the launch is left) reads what the pipes still hold without
waiting for their end: a pipe kept open by a process outside the launch's tree does not delay the
launcher's exit.
"""

import os
import selectors
import threading
import time

TRACEBACK = b"Traceback (most recent call last):"
# The lines between the parts of a chained traceback.
CHAIN = (b"During handling of the above exception, another exception occurred:",
         b"The above exception was the direct cause of the following exception:")
# Exceptions that say another rank failed: their tracebacks are folded, and the root cause is
# looked for elsewhere (docs/api/errors.md names what each one means).
CONSEQUENTIAL = frozenset({"NCCLRemoteError"})
HOLD_S = 0.5  # a traceback, then this long without a line, is complete
MAX_HELD_LINES = 5000  # a longer "traceback" is copied as it is
DRAIN_JOIN_S = 5.0  # how long the last output may take to reach our own stdout/stderr

WRITE_LOCK = threading.Lock()  # one piece at a time on our stdout/stderr


def write_console(stream, data):
    with WRITE_LOCK:
        try:
            stream.write(data)
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # our own stdout went away; keep draining so the rank never blocks


class RankError:
    """A rank's last complete traceback: its exception line, where it was raised, and when."""

    __slots__ = ("exception", "site", "when")

    def __init__(self, exception, site, when):
        self.exception, self.site, self.when = exception, site, when

    @property
    def type_name(self):
        """The exception's class name without its module ("NCCLRemoteError")."""
        return self.exception.split(":", 1)[0].strip().rsplit(".", 1)[-1]

    @property
    def consequential(self):
        return self.type_name in CONSEQUENTIAL


def _site(line):
    """'  File "/a/b.py", line 9, in f' -> 'b.py:9 in f' (the path relative to the working folder
    when it is under it)."""
    text = line.decode(errors="replace").strip()
    if not text.startswith('File "'):
        return text
    path, _, rest = text[len('File "'):].partition('", line ')
    number, _, func = rest.partition(", in ")
    here = os.getcwd() + os.sep
    if path.startswith(here):
        path = path[len(here):]
    return f"{path}:{number}" + (f" in {func}" if func else "")


class _Traceback:
    """A traceback being held: its lines, the last exception line and the last frame line."""

    def __init__(self, first):
        self.lines, self.exception, self.site = [first], None, None
        self.deadline = time.monotonic() + HOLD_S

    def takes(self, line):
        """Whether line belongs to this traceback (False: it is complete and line is the next)."""
        indented = line[:1] in (b" ", b"\t")
        if self.exception is not None and not indented and line and line not in CHAIN \
                and not line.startswith(TRACEBACK):
            return False
        self.lines.append(line)
        if line.startswith(TRACEBACK):  # the next part of a chained traceback
            self.exception = None
        elif line.lstrip().startswith(b'File "') and indented:
            self.site = line
        elif not indented and line and line not in CHAIN:
            self.exception = line
        return True


class _Stream:
    """One pipe of one rank: where its lines go."""

    def __init__(self, rank, kind, pipe, console, prefix, log):
        self.rank, self.kind, self.pipe = rank, kind, pipe
        self.console, self.prefix, self.log = console, prefix, log
        self.partial = b""
        self.held = None  # the _Traceback being held (stderr only)


class Output:
    """The copying thread and its settings: prefix (bool), shown (a set of ranks, or None for
    every rank), log_dir (a folder, or None)."""

    def __init__(self, stdout, stderr, prefix=True, shown=None, log_dir=None):
        self.stdout, self.stderr = stdout, stderr
        self.prefix, self.shown, self.log_dir = prefix, shown, log_dir
        self.errors = {}  # rank -> its last RankError
        self.quiet = False
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        self.lock = threading.Lock()
        self.added, self.finishing = [], False
        self.logs = []
        self.thread = threading.Thread(target=self._run, name="nccl.run-output", daemon=True)
        self.thread.start()

    def add_rank(self, rank, stdout, stderr, plain=None):
        """Takes over a rank's pipes (file objects; plain: its plain channel, or None)."""
        shown = self.shown is None or rank in self.shown
        out = err = None
        if self.log_dir is not None:
            out = open(os.path.join(self.log_dir, f"rank{rank}.out"), "wb")
            err = open(os.path.join(self.log_dir, f"rank{rank}.err"), "wb")
            self.logs += [out, err]
        prefix = f"[{rank}] ".encode() if self.prefix else b""
        streams = [_Stream(rank, "out", stdout, self.stdout if shown else None, prefix, out),
                   _Stream(rank, "err", stderr, self.stderr if shown else None, prefix, err)]
        if plain is not None:
            streams.append(_Stream(rank, "plain", plain, self.stdout if shown else None, b"", out))
        with self.lock:
            self.added += streams
        os.write(self.wake_w, b"+")

    def silence(self):
        """From now on nothing reaches the console (the files still get everything)."""
        self.quiet = True

    def finish(self):
        with self.lock:
            self.finishing = True
        os.write(self.wake_w, b".")
        self.thread.join(DRAIN_JOIN_S)  # only our own blocked stdout could hold it up

    # ---- the thread ----

    def _run(self):
        while True:
            for key, _ in self.selector.select(self._next_deadline()):
                if key.fd != self.wake_r:
                    self._read(key.data)
                    continue
                os.read(self.wake_r, 4096)
                with self.lock:
                    added, self.added, finishing = self.added, [], self.finishing
                for s in added:
                    self.selector.register(s.pipe.fileno(), selectors.EVENT_READ, s)
                if finishing:
                    self._drain()
                    return
            self._release_due()

    def _next_deadline(self):
        due = [s.held.deadline for k in self.selector.get_map().values() if k.fd != self.wake_r
               for s in (k.data,) if s.held is not None]
        return None if not due else max(0.0, min(due) - time.monotonic())

    def _release_due(self):
        now = time.monotonic()
        for key in list(self.selector.get_map().values()):
            s = key.data
            if key.fd != self.wake_r and s.held is not None and s.held.deadline <= now:
                self._release(s)

    def _read(self, s, chunk=65536):
        """One read of a pipe; True while it may hold more."""
        try:
            data = os.read(s.pipe.fileno(), chunk)
        except BlockingIOError:
            return False
        if data:
            s.partial += data
            *lines, s.partial = s.partial.split(b"\n")
            self._lines(s, lines)
            return True
        self._close(s)
        return False

    def _close(self, s):
        if s.partial:
            self._lines(s, [s.partial])
            s.partial = b""
        if s.held is not None:
            self._release(s)
        self.selector.unregister(s.pipe.fileno())
        s.pipe.close()

    def _drain(self):
        for key in list(self.selector.get_map().values()):
            if key.fd == self.wake_r:
                continue
            os.set_blocking(key.fd, False)
            while self._read(key.data):
                pass
            if key.fd in self.selector.get_map():  # still open elsewhere: what it held is out
                self._close(key.data)
        self.selector.close()
        os.close(self.wake_r)
        os.close(self.wake_w)
        for f in self.logs:
            f.close()

    # ---- lines ----

    def _lines(self, s, lines):
        if not lines:
            return
        if s.log is not None:
            try:
                s.log.write(b"".join(line + b"\n" for line in lines))
                s.log.flush()
            except (OSError, ValueError):
                pass
        if s.kind != "err":
            self._show(s, lines)
            return
        plain = []
        for line in lines:
            if s.held is not None and not s.held.takes(line):
                self._show(s, plain)
                plain = []
                self._release(s)
            if s.held is not None:
                s.held.deadline = time.monotonic() + HOLD_S
                if len(s.held.lines) > MAX_HELD_LINES:
                    self._show(s, s.held.lines)
                    s.held = None
            elif line == TRACEBACK:
                self._show(s, plain)
                plain = []
                s.held = _Traceback(line)
            else:
                plain.append(line)
        self._show(s, plain)

    def _release(self, s):
        """The held traceback is complete: kept as the rank's last error, then shown whole or folded."""
        tb, s.held = s.held, None
        if tb.exception is None:
            self._show(s, tb.lines)
            return
        error = RankError(tb.exception.decode(errors="replace"), _site(tb.site) if tb.site else None,
                          time.monotonic())
        self.errors[s.rank] = error
        if error.consequential:
            where = f"{error.site}; " if error.site else ""
            self._show(s, [tb.exception + f" [{where}traceback folded: another rank failed]".encode()])
        else:
            self._show(s, tb.lines)

    def _show(self, s, lines):
        if lines and s.console is not None and not self.quiet:
            write_console(s.console, b"".join(s.prefix + line + b"\n" for line in lines))
