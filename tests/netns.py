"""Machines made of Linux namespaces, for tests of what runs across hosts (docs/developing.md,
"Test layout"; tests/multihost uses it).

``Cluster(links=..., own_host=False)`` makes two nodes, "node A" and "node B". Each is a set of
namespaces held by one process (``unshare ... sleep``, killed when the cluster closes, when the
test process dies, or after ``lifetime`` seconds at the latest):

* its own network namespace, joined to the other node's by one veth pair per entry of ``links``
  (``(name, "10.77.0")``: interface ``<name>0`` on both sides, 10.77.0.1/24 on A and .2 on B, and
  fd77:<k>::1/64 and ::2 for the k-th link, k from 0); nothing else is reachable, and nothing is
  created or named in this machine's own namespaces (no /run/netns entry, no host interface), so
  parallel runs and leftovers cannot collide;
* its own mount namespace, so that its ``/etc/hosts`` can be a file the cluster writes (both
  nodes' names, ``nodea-<tag>`` and ``nodeb-<tag>``, on the first link's addresses);
* with ``own_host=True`` also its own UTS namespace (the hostname is the node's name) and its own
  ``/dev/shm`` (a small tmpfs): another machine in all but the kernel. Without it the nodes share
  this machine's hostname and ``/dev/shm``: one machine, two network namespaces.

``node.popen(argv, env=...)`` starts a process inside the node (``nsenter``), ``node.run(...)``
runs one to completion, ``node.sh(script)`` runs a shell command there (ip, nft) and raises on
failure. Every process started through a node is killed when the cluster closes, also when the
test fails. ``cluster.drop_tcp(node, port)`` makes the node's firewall drop connections to a
port (nftables; without ``nft``, a blackhole route to the node on the other one).

``unavailable()`` says why namespaces cannot be made here (not root, no ``unshare``/``nsenter``/
``ip``, or the kernel refuses), or returns None; tests skip with that reason.
"""

import ctypes
import functools
import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

READY_S = 20.0  # how long a holder may take to enter its namespaces
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """In a child before exec: SIGKILL when the process that started it goes away."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


PROBE = ("set -e; ip link set lo up; ip link add probe0 type veth peer name probe1; "
         "mount -t tmpfs -o size=1m nccl4py-probe /dev/shm; hostname probe")


@functools.lru_cache(maxsize=None)
def unavailable():
    """Why network namespaces with veth pairs cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (util-linux, iproute2)"
    try:
        r = subprocess.run(["unshare", "--net", "--mount", "--uts", "--propagation", "private", "sh", "-c", PROBE],
                           capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "unshare with a veth pair did not finish within 30 s"
    if r.returncode != 0:
        return f"the kernel refuses namespaces with a veth pair here: {(r.stderr or r.stdout).strip()[-300:]}"
    return None


@functools.lru_cache(maxsize=None)
def has_nft():
    """Whether nftables can drop packets inside a network namespace here."""
    if shutil.which("nft") is None:
        return False
    r = subprocess.run(["unshare", "--net", "nft", "add table inet probe"], capture_output=True, timeout=30)
    return r.returncode == 0


class Node:
    """One node of a Cluster: its name, its addresses per link, and a way in."""

    def __init__(self, cluster, index, name):
        self.cluster, self.index, self.name = cluster, index, name
        self.pid = None       # the holder's
        self.addrs = {}       # link name -> (IPv4, IPv6) of this node
        self.holder = None

    @property
    def addr(self):
        """IPv4 address on the first link."""
        return next(iter(self.addrs.values()))[0]

    @property
    def addr6(self):
        """IPv6 address on the first link."""
        return next(iter(self.addrs.values()))[1]

    def command(self, argv, cwd=None):
        """argv run inside this node's namespaces (nsenter; the working directory is cwd, else
        the cluster's directory)."""
        spaces = ["--net", "--mount"] + (["--uts"] if self.cluster.own_host else [])
        return ["nsenter", f"--target={self.pid}", *spaces, f"--wd={cwd or self.cluster.dir}", "--", *map(str, argv)]

    def popen(self, argv, env=None, cwd=None, **kwargs):
        """A process started inside the node (output captured as text unless kwargs say
        otherwise); the cluster kills it when it closes."""
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        kwargs.setdefault("text", True)
        proc = subprocess.Popen(self.command(argv, cwd), env=env, start_new_session=True,
                                preexec_fn=_die_with_parent, **kwargs)
        self.cluster.procs.append(proc)
        return proc

    def run(self, argv, env=None, timeout=60, cwd=None, input=None):
        """Runs argv inside the node to completion; the CompletedProcess."""
        proc = self.popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE if input is not None else None)
        try:
            out, err = proc.communicate(input, timeout=timeout)
        finally:
            _kill(proc)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def sh(self, script, timeout=30):
        """Runs a shell command inside the node; raises RuntimeError with its output if it fails."""
        r = self.run(["sh", "-c", script], timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{self.name}: {script!r} failed: {(r.stderr or r.stdout).strip()}")
        return r.stdout


def _kill(proc):
    """Kills proc's whole session (it was started in one of its own) and reaps it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


class Cluster:
    """Two nodes joined by veth pairs (see the module documentation); a context manager."""

    def __init__(self, links=(("data", "10.77.0"),), own_host=False, lifetime=300):
        if len(links) < 1:
            raise ValueError("a cluster needs at least one link")
        self.links, self.own_host, self.lifetime = tuple(links), own_host, lifetime
        self.tag = secrets.token_hex(3)
        self.nodes = [Node(self, i, f"node{'ab'[i]}-{self.tag}") for i in range(2)]
        self.procs = []
        self.dir = None

    # ---- making it ----

    def __enter__(self):
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _make(self):
        self.dir = Path(tempfile.mkdtemp(prefix="nccl4py-netns-"))
        self.dir.chmod(0o755)
        for k, (link, prefix) in enumerate(self.links):
            for node in self.nodes:
                node.addrs[link] = (f"{prefix}.{node.index + 1}", f"fd77:{k}::{node.index + 1}")
        hosts = self.dir / "hosts"
        hosts.write_text("127.0.0.1 localhost\n::1 localhost ip6-localhost\n" +
                         "".join(f"{node.addr} {node.name}\n" for node in self.nodes))
        hosts.chmod(0o644)
        for node in self.nodes:
            self._hold(node, hosts)
        for link, _ in self.links:
            a, b = self.nodes
            r = subprocess.run(["ip", "link", "add", f"{link}0", "netns", str(a.pid), "type", "veth", "peer", "name",
                                f"{link}0", "netns", str(b.pid)], capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                raise RuntimeError(f"cannot make the veth pair {link}0: {r.stderr.strip()}")
            for node in self.nodes:
                v4, v6 = node.addrs[link]
                node.sh(f"ip addr add {v4}/24 dev {link}0 && ip addr add {v6}/64 dev {link}0 nodad && "
                        f"ip link set {link}0 up")

    def _hold(self, node, hosts):
        """Starts the process that holds node's namespaces; returns once it is inside them."""
        spaces = ["--net", "--mount", "--propagation", "private"] + (["--uts"] if self.own_host else [])
        setup = [f"mount --bind {hosts} /etc/hosts", "ip link set lo up"]
        if self.own_host:
            setup += [f"hostname {node.name}", "mount -t tmpfs -o size=64m,mode=1777 nccl4py-test /dev/shm"]
        script = "set -e; " + "; ".join(setup) + f"; echo ready; exec sleep {int(self.lifetime)}"
        node.holder = subprocess.Popen(["unshare", *spaces, "sh", "-c", script], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, start_new_session=True,
                                       preexec_fn=_die_with_parent)
        ready, _, _ = select.select([node.holder.stdout], [], [], READY_S)
        line = node.holder.stdout.readline() if ready else ""
        if line.strip() != "ready":
            _kill(node.holder)
            raise RuntimeError(f"{node.name}'s namespaces were not ready within {READY_S:g} s: "
                               f"{node.holder.stderr.read().strip()}")
        node.pid = node.holder.pid
        # the holder must be in a network namespace of its own: a link made for it must never land here
        if os.stat(f"/proc/{node.pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino:
            raise RuntimeError(f"{node.name}'s holder is in this process's network namespace")

    # ---- using it ----

    def drop_tcp(self, node, port):
        """Makes node drop every TCP packet to port (its firewall: nftables); without nft, a
        blackhole route to node's addresses on the other nodes. Returns which was used."""
        if has_nft():
            node.sh("nft add table inet nccl4py_test && nft add chain inet nccl4py_test input "
                    "'{ type filter hook input priority 0; }' && "
                    f"nft add rule inet nccl4py_test input tcp dport {int(port)} drop")
            return "nft"
        for other in self.nodes:
            if other is not node:
                other.sh(" && ".join(f"ip route add blackhole {v4}/32" for v4, _ in node.addrs.values()))
        return "blackhole route"

    def close(self):
        """Kills every process started through the nodes, then the holders (the namespaces and
        links go with them), and removes the cluster's directory."""
        for proc in self.procs:
            _kill(proc)
        self.procs.clear()
        for node in self.nodes:
            if node.holder is not None:
                _kill(node.holder)
                node.holder = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
