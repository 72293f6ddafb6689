"""The guard of one ``python -m nccl.run`` launch, and the process-tree sweep it shares with the
launcher.

    python -I -S _run_guard.py TOKEN

The launcher starts this script (as a file, in its own session, so that nothing aimed at the
launcher's process group reaches it) with a pipe on its standard input, writes the pid of every
rank it starts (each rank leads its own process group), and writes "done" when it has stopped
the ranks itself. If the pipe closes without "done", the launcher was killed (SIGKILL, OOM) and
could not clean up: the guard then stops every process in a rank's process group, every process
whose environment carries NCCL4PY_RUN_TOKEN=TOKEN (a rank started just before the launcher died,
or a rank's child that left its group), and every descendant of those, with SIGTERM, then SIGKILL
after a grace period.

The launcher itself (nccl/run.py) is a child subreaper, so everything a rank starts stays its
descendant; it stops its descendants with the same ``stop`` below.

Only the standard library is used, and nothing of nccl is imported.
"""

import os
import signal
import sys
import time

TOKEN_VARIABLE = "NCCL4PY_RUN_TOKEN"
GRACE_S = 3.0  # between SIGTERM and SIGKILL
KILL_WAIT_S = 10.0  # how long SIGKILL is repeated while something is still found
POLL_S = 0.05

# Fields of /proc/PID/stat after the command's closing parenthesis (state is field 3 of proc(5)).
_STATE, _PPID, _PGRP, _START = 0, 1, 2, 19


def process_table():
    """{pid: (ppid, pgrp, state, start time)} of every process, zombies included."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            table[int(name)] = (int(fields[_PPID]), int(fields[_PGRP]), fields[_STATE].decode(),
                                int(fields[_START]))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return table


def descendants(table, roots):
    """The roots found in table and all their descendants."""
    children = {}
    for pid, info in table.items():
        children.setdefault(info[0], []).append(pid)
    found, todo = set(), [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def living(table, pids):
    """{pid: start time} of those pids that are neither zombies nor dead."""
    return {p: table[p][3] for p in pids if p in table and table[p][2] not in ("Z", "X")}


def marked(token):
    """Pids of our processes whose environment holds TOKEN_VARIABLE=token."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    me = os.getpid()
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.add(int(name))
        except OSError:
            continue
    return found


def _start_time(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[_START])
    except (OSError, IndexError, ValueError):
        return None


def signal_all(procs, sig):
    """Sends sig to each {pid: start time} still the same process (a pid reused since the table
    was read has another start time; a pidfd holds the process while that is checked)."""
    for pid, start in procs.items():
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        except OSError:  # no pidfds on this kernel: the start time check narrows the race
            fd = None
        try:
            if _start_time(pid) != start:
                continue
            if fd is None:
                os.kill(pid, sig)
            else:
                signal.pidfd_send_signal(fd, sig)
        except OSError:
            pass
        finally:
            if fd is not None:
                os.close(fd)


def stop(find, grace=GRACE_S):
    """SIGTERM to every process find() returns ({pid: start time}), SIGTERM to newcomers while
    any is left, for up to grace seconds, then SIGKILL to whatever find() still returns, repeated
    until it returns nothing (for up to KILL_WAIT_S). Returns what is left (normally nothing)."""
    left = find()
    termed = set(left)
    signal_all(left, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while left and time.monotonic() < deadline:
        time.sleep(POLL_S)
        left = find()
        signal_all({p: s for p, s in left.items() if p not in termed}, signal.SIGTERM)
        termed.update(left)
    deadline = time.monotonic() + KILL_WAIT_S
    while left and time.monotonic() < deadline:
        signal_all(left, signal.SIGKILL)
        time.sleep(POLL_S / 5)
        left = find()
    return left


def _ranks_and_theirs(pgids, token):
    table = process_table()
    roots = {pid for pid, info in table.items() if info[1] in pgids} | marked(token)
    return living(table, descendants(table, roots) - {os.getpid()})


def main(argv):
    token = argv[1]
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)  # only the pipe tells the guard what to do
    pgids = set()
    for line in sys.stdin.buffer:
        line = line.strip()
        if line == b"done":
            return 0
        if line.isdigit():
            pgids.add(int(line))
    stop(lambda: _ranks_and_theirs(pgids, token))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
