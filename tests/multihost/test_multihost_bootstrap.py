"""The host backend's bootstrap address across network namespaces (src/host/node.c,
docs/host-backend.md#several-machines-and-network-namespaces): NCCL_SOCKET_IFNAME in NCCL's
spelling, NCCL's default choice, and a job whose bootstrap runs over the interface it names.

The nodes have two links, data0 (10.77.0.x) and mgmt0 (10.78.0.x), made in that order, so the
kernel lists lo, data0, mgmt0.
"""

import json
import re
import sys

import pytest

import launchers
import netns

LINKS = (("data", "10.77.0"), ("mgmt", "10.78.0"))
NO_MATCH = ("NCCL_SOCKET_IFNAME==mgmt selects no interface that is up with an IPv4 address (those here: lo, data0, "
            "mgmt0)")

# Node A's bootstrap address as ncclGetUniqueId writes it into the id (bytes 68-71) and as the
# NCCL_HOST_BIND_ADDR parameter reports it, or ncclGetUniqueId's error.
PROBE = r"""
import ctypes, json, pathlib, socket
import nccl
L = ctypes.CDLL(str(pathlib.Path(nccl.__file__).resolve().parent / "_lib" / "libnccl-host.so"))
L.ncclGetLastError.restype = ctypes.c_char_p
uid = ctypes.create_string_buffer(128)
rc = L.ncclGetUniqueId(uid)
value, length = ctypes.c_char_p(), ctypes.c_int()
assert L.ncclParamGetParameter(b"NCCL_HOST_BIND_ADDR", ctypes.byref(value), ctypes.byref(length)) == 0
print(json.dumps({"rc": rc, "root": socket.inet_ntoa(uid.raw[68:72]) if rc == 0 else None,
                  "param": value.value.decode(), "error": L.ncclGetLastError(None).decode()}))
"""


@pytest.fixture(scope="module")
def two_links(_namespaces_available):
    with netns.Cluster(links=LINKS) as cluster:
        yield cluster


@pytest.mark.timeout(60)
@pytest.mark.parametrize("env, address", [
    ({}, "10.77.0.1"),                                    # NCCL's choice: the first but lo (and docker)
    ({"NCCL_SOCKET_IFNAME": "mgmt"}, "10.78.0.1"),        # a prefix
    ({"NCCL_SOCKET_IFNAME": "mgmt,data"}, "10.77.0.1"),   # several: the kernel's order, not the list's
    ({"NCCL_SOCKET_IFNAME": "=mgmt0"}, "10.78.0.1"),      # a whole name
    ({"NCCL_SOCKET_IFNAME": "^data,lo"}, "10.78.0.1"),    # all but these prefixes
    ({"NCCL_SOCKET_IFNAME": "^data"}, "127.0.0.1"),       # as NCCL: a list of its own leaves lo eligible
    ({"NCCL_SOCKET_IFNAME": "^=data0,lo"}, "10.78.0.1"),  # all but these whole names
    ({"NCCL_SOCKET_IFNAME": "=mgmt"}, None),              # no interface has that whole name
    ({"NCCL_SOCKET_IFNAME": "mgmt", "NCCL_HOST_ALLOW_NONLOOPBACK": None}, "127.0.0.1"),  # without the switch
    ({"NCCL_SOCKET_IFNAME": "mgmt", "NCCL_HOST_BIND_ADDR": "10.77.0.1"}, "10.77.0.1"),   # the address wins
], ids=lambda v: v if isinstance(v, str) or v is None else ",".join(f"{k}={v[k]}" for k in v) or "default")
def test_bootstrap_address(two_links, env, address):
    a = two_links.nodes[0]
    r = a.run([sys.executable, "-c", PROBE], env=launchers.host_env(**env), timeout=60)
    assert r.returncode == 0, r.stderr[-4000:]
    got = json.loads(r.stdout.splitlines()[-1])
    if address is None:
        assert got["rc"] == 5 and got["root"] is None, got  # ncclInvalidUsage
        assert got["error"] == f"ncclGetUniqueId: cannot start the bootstrap root: {NO_MATCH}", got
    else:
        assert got["rc"] == 0 and got["root"] == got["param"] == address, got


@pytest.mark.timeout(120)
def test_a_job_over_the_interface_it_names(two_links):
    """NCCL_SOCKET_IFNAME==mgmt0 on both nodes: each rank's listeners bind its own mgmt0 address,
    the job runs over that link, and the ranks say they pass descriptors through /dev/shm."""
    lay = launchers.layout("torchrun", "ipv4", 1, two_links, 29500, secret="s", slots=1)
    launches = {key: [{"name": "job", "environ": env, "timeout": 30}] for key, env in lay.items()}
    logs = {node: two_links.dir / f"node{node}.log" for node in range(2)}
    procs = {key: launchers.start(two_links, key, specs, launchers.host_env(
        NCCL_SOCKET_IFNAME="=mgmt0", NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="BOOTSTRAP,INIT",
        NCCL_DEBUG_FILE=logs[key[0]])) for key, specs in launches.items()}
    records = launchers.collect(procs, launches, timeout=90)
    for node in range(2):
        rec = records[(node, 0)][0]
        assert "error" not in rec and rec["ok"] is True, rec
        log = logs[node].read_text()
        assert f"bootstrap listeners bind 10.78.0.{node + 1} (interface mgmt0, by NCCL_SOCKET_IFNAME==mgmt0)" in log, log
        assert re.search(rf"comm rank {node}/2: communicator ready \(segment \d+ bytes; the ranks span network "
                         r"namespaces: descriptors pass through /dev/shm\)", log), log
