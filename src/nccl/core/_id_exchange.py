"""Handing rank 0's unique id to the other ranks over TCP (Communicator.from_env, torchrun-style
launches). The reasoning: docs/architecture.md#the-unique-id-exchange.

Under torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True, the store at
MASTER_ADDR:MASTER_PORT) the id goes through that store, with torch.distributed.TCPStore: rank 0
sets a key, the others read it. The store is torchrun's, not ours: we open no listener.

Everywhere else rank 0 serves the id itself, on (MASTER_ADDR, MASTER_PORT + 1 or NCCL4PY_ID_PORT)
and on that interface only, to ranks that prove they belong to the job:

* NCCL4PY_ID_SECRET set (the same value on every rank): the rank and rank 0 each prove knowledge
  of it with an HMAC-SHA256 over both sides' fresh nonces, and rank 0 sends the id with an
  HMAC-SHA256 over it and those nonces; a rank refuses a server that fails either check.
* otherwise the exchange must stay on this machine (a loopback address): rank 0 serves only
  connections owned by its own user, and a rank takes the id only from a server of that user
  (both read from /proc/net/tcp). Anything else is an error that says what to set.

The id itself is not encrypted: it crosses the network in the clear, as NCCL's own bootstrap
traffic and torch's TCPStore do.

Rank 0 serves connections concurrently: a connection that does not complete its handshake within
HANDSHAKE_S is dropped, at most MAX_PENDING wait at once (the oldest is dropped first), and none
of them delays another.
"""

import errno
import hashlib
import hmac
import ipaddress
import os
import secrets
import selectors
import socket
import struct
import time

ID_BYTES = 128
MAGIC = b"N4PYID3\0"
HELLO = struct.Struct("<8sii16s")  # magic, rank, nranks, client nonce
SERVER_PROOF = struct.Struct("<16s32s")  # server nonce, HMAC
CLIENT_PROOF = struct.Struct("<32s")
ID_REPLY = struct.Struct(f"<{ID_BYTES}s32s")  # the id, HMAC
HANDSHAKE_S = 2.0
MAX_PENDING = 64
SECRET_VARIABLE = "NCCL4PY_ID_SECRET"


class ExchangeError(RuntimeError):
    """The id exchange cannot be done safely as configured."""


# ---- through torchrun's agent store (torch.distributed.TCPStore) ----

def torch_store_class():
    """torch.distributed.TCPStore, or None when torch (or its distributed package) is missing."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available():
        return None
    return dist.TCPStore


def uses_agent_store(env):
    """True under torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True), whose address is
    MASTER_ADDR:MASTER_PORT."""
    return env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"


def exchange_over_store(store_class, rank, uid, timeout, env):
    """The id through torchrun's agent store: rank 0 sets a key, the others wait for it."""
    import datetime

    prefix = "/".join(["nccl4py", "unique_id", env.get("TORCHELASTIC_RUN_ID", "-"),
                       env.get("TORCHELASTIC_RESTART_COUNT", "0")])
    store = store_class(env["MASTER_ADDR"], int(env["MASTER_PORT"]), is_master=False,
                        timeout=datetime.timedelta(seconds=timeout))
    # The k-th exchange of each rank uses the k-th key: the agent's store outlives one exchange.
    key = f"{prefix}/{store.add(f'{prefix}/calls/{rank}', 1)}"
    if rank == 0:
        store.set(key, uid)
        return uid
    got = bytes(store.get(key))
    if len(got) != ID_BYTES:
        raise ExchangeError(f"the unique id from torchrun's store has {len(got)} bytes, not {ID_BYTES}")
    return got


# ---- our own exchange ----

def _is_loopback(addr):
    try:
        infos = socket.getaddrinfo(addr, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def _proc_addr(text):
    """An address column of /proc/net/tcp[6] ("0100007F:1F90") as (ip_address, port)."""
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    # the kernel prints each 32-bit word in host (little-endian) order
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(raw)
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip, int(port, 16)


def _norm(sockaddr):
    ip = ipaddress.ip_address(sockaddr[0].split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip, sockaddr[1]


def tcp_owners():
    """{(local, remote): uid} of every TCP socket of this network namespace (/proc/net/tcp[6])."""
    owners = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 7:
                owners[(_proc_addr(cols[1]), _proc_addr(cols[2]))] = int(cols[7])
    return owners


def peer_uid(sock, owners=None):
    """The uid owning the other end of a connection on this machine; None when it is not found."""
    try:
        me, peer = _norm(sock.getsockname()), _norm(sock.getpeername())
    except OSError:
        return None
    return (tcp_owners() if owners is None else owners).get((peer, me))


def _mac(key, *parts):
    return hmac.new(key, b"|".join(parts), hashlib.sha256).digest()


def _auth(addr, secret):
    """(key, check_uid) for the exchange, or ExchangeError when it cannot be made safe."""
    if secret:
        return secret.encode(), False
    if _is_loopback(addr):
        return b"", True
    raise ExchangeError(f"the unique id exchange over TCP on {addr} would not be authenticated: set "
                        f"{SECRET_VARIABLE} to the same secret on every rank, or launch with python -m nccl.run, "
                        "mpirun (with mpi4py) or torchrun with its agent store (its default: the id then goes through "
                        "torchrun's store)")


def exchange_over_tcp(rank, nranks, addr, port, uid=None, timeout=300.0, secret=None, port_origin=None):
    """Hands rank 0's id to every rank over TCP; returns the 128 bytes on every rank.

    Rank 0 listens on (addr, port) and serves each of the nranks - 1 other ranks once, after the
    handshake described in the module documentation; the others connect, with retries (rank 0
    may not listen yet), until the deadline. port_origin says where the port came from (for
    instance "MASTER_PORT + 1"), for rank 0's error when it cannot listen there."""
    key, check_uid = _auth(addr, secret)
    deadline = time.monotonic() + timeout
    if rank == 0:
        uid = bytes(uid)
        if len(uid) != ID_BYTES:
            raise ValueError(f"the unique id must be {ID_BYTES} bytes")
        if nranks > 1:
            with _listen(addr, port, port_origin) as srv:
                _serve(srv, uid, nranks, addr, port, key, check_uid, deadline, timeout)
        return uid
    return _fetch(rank, nranks, addr, port, key, check_uid, deadline, timeout)


class _Conn:
    __slots__ = ("sock", "deadline", "buf", "stage", "rank", "cnonce", "snonce")

    def __init__(self, sock, deadline):
        self.sock, self.deadline = sock, deadline
        self.buf, self.stage, self.rank, self.cnonce, self.snonce = b"", 0, -1, b"", b""


def _listen(addr, port, origin):
    """Rank 0's listening socket on addr's own interface (loopback when addr is loopback)."""
    family, _, _, _, sockaddr = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)[0]
    try:
        return socket.create_server(sockaddr, family=family, backlog=128)
    except OSError as exc:
        where = f"{addr}:{port}" + (f" ({origin})" if origin else "")
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"rank 0 cannot serve the unique id on {where}: the port is already in use, by "
                                     "another job or another process on this machine; set NCCL4PY_ID_PORT to a free "
                                     "port, the same on every rank (or choose another MASTER_PORT)") from exc
        if exc.errno == errno.EADDRNOTAVAIL:
            raise OSError(exc.errno, f"rank 0 cannot serve the unique id on {where}: {addr} is not an address of this "
                                     "machine; MASTER_ADDR must name the machine of rank 0") from exc
        raise


def _serve(srv, uid, nranks, addr, port, key, check_uid, deadline, timeout):
    served = set()
    sel = selectors.DefaultSelector()
    pending = {}
    me = os.geteuid()
    srv.setblocking(False)
    sel.register(srv, selectors.EVENT_READ)

    def drop(c):
        pending.pop(c.sock.fileno(), None)
        sel.unregister(c.sock)
        c.sock.close()

    try:
        while len(served) < nranks - 1:
            now = time.monotonic()
            if now >= deadline:
                missing = sorted(set(range(1, nranks)) - served)
                raise TimeoutError(f"unique id exchange on {addr}:{port}: rank(s) {missing} did not connect "
                                   f"within {timeout:g} s (they must reach {addr}:{port} from their machines: not "
                                   "started, failed, refused by a firewall, or given another MASTER_ADDR?)")
            for c in [c for c in pending.values() if c.deadline <= now]:
                drop(c)
            wake = min([deadline] + [c.deadline for c in pending.values()])
            for sk, _ in sel.select(max(0.0, wake - now)):
                if sk.fileobj is srv:
                    fresh = []
                    for _ in range(256):
                        try:
                            fresh.append(srv.accept()[0])
                        except OSError:  # nothing more waiting, or no descriptor left
                            break
                    owners = tcp_owners() if check_uid and fresh else None
                    for s in fresh:
                        if check_uid and peer_uid(s, owners) != me:
                            s.close()  # another user's connection: not even read
                            continue
                        if len(pending) >= MAX_PENDING:
                            drop(min(pending.values(), key=lambda c: c.deadline))
                        s.setblocking(False)
                        c = _Conn(s, time.monotonic() + HANDSHAKE_S)
                        pending[s.fileno()] = c
                        sel.register(s, selectors.EVENT_READ, c)
                    continue
                c = sk.data
                if c.sock.fileno() not in pending:
                    continue
                if _step(c, uid, nranks, key, served):
                    served.add(c.rank)
                    drop(c)
                elif c.stage < 0:
                    drop(c)
    finally:
        for c in list(pending.values()):
            drop(c)
        sel.close()


def _step(c, uid, nranks, key, served):
    """Advances one connection's handshake; True once it has the id, stage -1 when it failed."""
    try:
        data = c.sock.recv(256)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        c.stage = -1
        return False
    if not data:
        c.stage = -1
        return False
    c.buf += data
    try:
        if c.stage == 0 and len(c.buf) >= HELLO.size:
            magic, rank, n, c.cnonce = HELLO.unpack(c.buf[:HELLO.size])
            c.buf = c.buf[HELLO.size:]
            if magic != MAGIC or n != nranks or not 0 < rank < nranks or rank in served:
                c.stage = -1
                return False
            c.rank, c.snonce = rank, secrets.token_bytes(16)
            c.sock.sendall(SERVER_PROOF.pack(c.snonce, _mac(key, b"server", c.cnonce, c.snonce, _ranks(rank, n))))
            c.stage = 1
        if c.stage == 1 and len(c.buf) >= CLIENT_PROOF.size:
            (proof,) = CLIENT_PROOF.unpack(c.buf[:CLIENT_PROOF.size])
            want = _mac(key, b"client", c.snonce, c.cnonce, _ranks(c.rank, nranks))
            if not hmac.compare_digest(proof, want):
                c.stage = -1
                return False
            c.sock.sendall(ID_REPLY.pack(uid, _mac(key, b"id", c.cnonce, c.snonce, _ranks(c.rank, nranks), uid)))
            return True
    except OSError:  # a full send buffer on a 160-byte reply, or a reset: not one of ours
        c.stage = -1
    return False


def _ranks(rank, nranks):
    return struct.pack("<ii", rank, nranks)


def _recv_exact(sock, n, deadline):
    data = b""
    while len(data) < n:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(n - len(data))
        except TimeoutError:  # connected, so not a dropped connection: a server that does not answer
            raise ConnectionError("the server took the connection but did not answer the handshake") from None
        if not chunk:
            raise ConnectionError("the peer closed the connection early")
        data += chunk
    return data


class _Refused(ConnectionError):
    """A server this rank does not take the id from: not rank 0, or not authenticated as it."""


def _fetch(rank, nranks, addr, port, key, check_uid, deadline, timeout):
    delay, last, refused = 0.05, None, None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            also = f"; refused before: {refused}" if refused is not None and refused is not last else ""
            raise TimeoutError(f"unique id exchange: rank {rank} could not get the id from rank 0 at {addr}:{port} "
                               f"within {timeout:g} s (last error: {last}{also}){_unreached(last, addr, port)}")
        try:
            with socket.create_connection((addr, port), timeout=min(left, 10.0)) as s:
                return _fetch_once(s, rank, nranks, addr, port, key, check_uid, min(deadline, time.monotonic() + 10))
        except OSError as exc:  # ConnectionError and _Refused included
            last = exc
            if isinstance(exc, _Refused):
                refused = exc
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 1.0)


def _unreached(error, addr, port):
    """What a rank's last connection error says about rank 0's exchange, for its TimeoutError."""
    if isinstance(error, ConnectionRefusedError):
        return (f": nothing listens on {addr}:{port}; rank 0 has not started or has failed, or MASTER_ADDR does not "
                "name rank 0's machine")
    if isinstance(error, TimeoutError):
        return (f": {addr}:{port} never answered; a firewall drops the connections, or no machine has the address "
                "MASTER_ADDR names")
    return ""


def _fetch_once(s, rank, nranks, addr, port, key, check_uid, deadline):
    """One handshake with the server on the connected socket s; the id, or an OSError."""
    if check_uid and peer_uid(s) != os.geteuid():
        raise _Refused(f"{addr}:{port} is served by another user's process")
    cnonce = secrets.token_bytes(16)
    s.sendall(HELLO.pack(MAGIC, rank, nranks, cnonce))
    snonce, proof = SERVER_PROOF.unpack(_recv_exact(s, SERVER_PROOF.size, deadline))
    if not hmac.compare_digest(proof, _mac(key, b"server", cnonce, snonce, _ranks(rank, nranks))):
        raise _Refused(f"{addr}:{port} does not know this job's {SECRET_VARIABLE}")
    s.sendall(CLIENT_PROOF.pack(_mac(key, b"client", snonce, cnonce, _ranks(rank, nranks))))
    uid, proof = ID_REPLY.unpack(_recv_exact(s, ID_REPLY.size, deadline))
    if not hmac.compare_digest(proof, _mac(key, b"id", cnonce, snonce, _ranks(rank, nranks), uid)):
        raise _Refused(f"the id from {addr}:{port} is not authenticated by this job's {SECRET_VARIABLE} (changed on "
                       "the way, or not from rank 0)")
    return uid
