"""The guard of one ``python -m nccl.run`` launch: stops the ranks when the launcher dies.

    python -I -S _run_guard.py TOKEN

The launcher starts this script (as a file, in its own session, so that nothing aimed at the
launcher's process group reaches it) with a pipe on its standard input, writes the pid of every
rank it starts (each rank leads its own process group), and writes "done" when it has stopped
the ranks itself. If the pipe closes without "done", the launcher was killed (SIGKILL, OOM) and
could not clean up: the guard then stops every rank's process group, and every process of ours
whose environment carries NCCL4PY_RUN_TOKEN=TOKEN (a rank started just before the launcher died,
or a rank's child that left its group), with SIGTERM, then SIGKILL after a grace period.

Only the standard library is used, and nothing of nccl is imported.
"""

import os
import signal
import sys
import time

TOKEN_VARIABLE = "NCCL4PY_RUN_TOKEN"
GRACE_S = 3.0


def _marked(token):
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


def _signal(pgids, pids, sig):
    for g in pgids:
        try:
            os.killpg(g, sig)
        except OSError:
            pass
    for p in pids:
        try:
            os.kill(p, sig)
        except OSError:
            pass


def _any_alive(pgids, pids):
    for g in pgids:
        try:
            os.killpg(g, 0)
            return True
        except OSError:
            pass
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return True
        except (OSError, IndexError):
            pass
    return False


def stop(pgids, token):
    pids = _marked(token)
    _signal(pgids, pids, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline and _any_alive(pgids, pids):
        time.sleep(0.05)
    _signal(pgids, pids | _marked(token), signal.SIGKILL)


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
    stop(pgids, token)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
