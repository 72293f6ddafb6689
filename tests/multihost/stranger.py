"""A process on another node that is not one of the job's ranks (tests/multihost): it tries rank
0's id exchange and the host backend's bootstrap root, and prints what it got as one JSON line.

argv: the address of rank 0's node, the id exchange's port, the bootstrap root's port.

* exchange, garbage: connects, sends bytes that are no handshake, and reads what comes back;
* exchange, wrong secret: the real client with a secret that is not the job's;
* exchange, wrong size: a well-formed hello that claims another number of ranks;
* root, garbage: a hello-sized blob of random bytes;
* root, forged hello: a HELLO header (src/host/wire.h) over random bytes, so a random secret.
"""

import json
import os
import socket
import struct
import sys
import time

from nccl.core import _id_exchange as X

HOST_MSG_HELLO = 0x48454C4F  # src/host/wire.h
HOST_MSG_ROOT_FAIL = HOST_MSG_HELLO + 3
HELLO_BYTES = 152  # sizeof(host_hello) (src/host/wire.h)


def connect(addr, port, wait=20.0):
    """A connection to addr:port, retried while nothing listens there yet."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return socket.create_connection((addr, port), timeout=5)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def answer(sock, payload):
    """What the server sends back to payload before it closes (at most 4 KiB, 5 s)."""
    sock.sendall(payload)
    got = b""
    sock.settimeout(5)
    try:
        while len(got) < 4096 and (chunk := sock.recv(4096)):
            got += chunk
    except ConnectionResetError:  # closed with some of payload unread: closed all the same
        pass
    except OSError as exc:
        got += f"<{type(exc).__name__}>".encode()
    return got


def main():
    addr, id_port, root_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out = {}
    with connect(addr, id_port) as s:
        out["exchange_garbage"] = answer(s, b"GET / HTTP/1.0\r\n\r\n" * 8).hex()
    try:
        X.exchange_over_tcp(1, 2, addr, id_port, timeout=2, secret="not-the-job-secret")
        out["exchange_wrong_secret"] = "GOT THE ID"
    except TimeoutError as exc:
        out["exchange_wrong_secret"] = str(exc)
    with connect(addr, id_port) as s:
        out["exchange_wrong_size"] = answer(s, X.HELLO.pack(X.MAGIC, 1, 3, os.urandom(16))).hex()
    with connect(addr, root_port) as s:
        out["root_garbage"] = answer(s, os.urandom(16 + HELLO_BYTES)).hex()
    with connect(addr, root_port) as s:
        reply = answer(s, struct.pack("<IIQ", HOST_MSG_HELLO, HELLO_BYTES, 0) + os.urandom(HELLO_BYTES))
        kind = struct.unpack_from("<I", reply)[0] if len(reply) >= 4 else None
        text = reply[20:].split(b"\0")[0].decode(errors="replace") if len(reply) > 20 else ""
        out["root_forged_hello"] = {"type": kind, "text": text, "bytes": len(reply)}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
