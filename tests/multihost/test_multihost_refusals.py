"""What goes wrong across hosts ends with a clear error, never a hang (tests/netns.py nodes):

* the host backend's ranks on two machines (nodes with their own /dev/shm and hostname) fail
  at init, both, naming both hosts; without NCCL_HOST_ALLOW_NONLOOPBACK the rank on the other
  machine fails at once and rank 0 at its deadline; on two network namespaces of one machine
  the rank that cannot reach a loopback root says which switch to set;
* MASTER_ADDR that is not an address of rank 0's node; a firewall that drops the id port;
* strangers on the other node (garbage, a wrong secret, a forged hello at the bootstrap root)
  get nothing, and the job goes on.
"""

import json
import re
import sys
import time
from pathlib import Path

import pytest

import launchers

HERE = Path(__file__).resolve().parent
SECRET = "multihost-secret"
PORT = 29500  # MASTER_PORT; the cluster's namespaces are its own, so a fixed port is free
ONE_MACHINE_RULE = ("The host backend runs every rank of a communicator on one machine, over shared memory; across "
                    "machines use NCCL or RCCL")


def _two_ranks(cluster, address="ipv4", timeout=30, secret=SECRET):
    """{(node, 0): [launch]}: a torchrun-style launch of one rank per node."""
    lay = launchers.layout("torchrun", address, 1, cluster, PORT, secret=secret, slots=1)
    return {key: [{"name": "init", "environ": env, "timeout": timeout}] for key, env in lay.items()}


def _errors(records):
    return [records[(node, 0)][0].get("error", "") for node in range(2)]


def _library_error(text):
    """The library's own text in an NCCLError's message."""
    return text.split("library's last error: ", 1)[-1]


@pytest.mark.timeout(120)
def test_host_backend_ranks_on_two_machines_fail_naming_both(two_machines):
    a, b = (node.name for node in two_machines.nodes)
    launches = _two_ranks(two_machines)
    records = launchers.run_job(two_machines, launches, launchers.host_env(NCCL_HOST_TIMEOUT="120"), timeout=90)
    # the root names the rank that checked in second first, and either may be first
    pair = [re.escape(f"rank {r} (pid ") + r"\d+" + re.escape(f" on host {host})") for r, host in ((0, a), (1, b))]
    tail = re.escape(f" are not on one machine: they are in different network namespaces and do not share /dev/shm. "
                     f"{ONE_MACHINE_RULE}")
    pattern = f"({pair[1]} and {pair[0]}|{pair[0]} and {pair[1]}){tail}"
    for rank, error in enumerate(_errors(records)):
        assert error.startswith("NCCLInvalidUsage"), error
        assert re.fullmatch(f"comm rank {rank}: bootstrap failed: {pattern}", _library_error(error)), error
        # the root decided when rank 1 checked in, long before the 120 s deadline
        assert records[(rank, 0)][0]["seconds"] < 60, records


@pytest.mark.timeout(120)
def test_loopback_id_from_another_machine(two_machines):
    """Without NCCL_HOST_ALLOW_NONLOOPBACK the root listens on node A's loopback: the rank on
    node B refuses the id at once, naming both hosts; rank 0 hears from nobody and fails at its
    deadline, naming the missing rank."""
    a, b = (node.name for node in two_machines.nodes)
    env = launchers.host_env(NCCL_HOST_ALLOW_NONLOOPBACK=None, NCCL_HOST_TIMEOUT="3")
    records = launchers.run_job(two_machines, _two_ranks(two_machines), env, timeout=90)
    rank0, rank1 = _errors(records)
    assert re.fullmatch(re.escape(f"comm rank 1 (host {b}) cannot use this unique id: it was made on another machine "
                                  "(pid ") + r"\d+" + re.escape(f" on host {a}): they are in different network "
                                                                f"namespaces and do not share /dev/shm. {ONE_MACHINE_RULE}"),
                        _library_error(rank1)), rank1
    assert rank0.startswith("NCCLTimeout") and _library_error(rank0) == (
        "comm rank 0: bootstrap failed: unique id never completed: 1 of 2 ranks checked in before the deadline; "
        "missing rank(s) 1"), rank0


@pytest.mark.timeout(120)
def test_loopback_id_in_another_network_namespace(one_machine):
    """Two network namespaces of one machine without NCCL_HOST_ALLOW_NONLOOPBACK: the rank that
    cannot reach the loopback root says so and names the switch (the message this replaced
    blamed an exited process)."""
    env = launchers.host_env(NCCL_HOST_ALLOW_NONLOOPBACK=None, NCCL_HOST_TIMEOUT="3")
    records = launchers.run_job(one_machine, _two_ranks(one_machine), env, timeout=90)
    rank0, rank1 = _errors(records)
    assert re.fullmatch(r"comm rank 1 \(host [^)]+\) cannot reach the unique id's root: it listens on loopback in "
                        r"another network namespace \(pid \d+ on host [^)]+\); set NCCL_HOST_ALLOW_NONLOOPBACK=1 on "
                        r"every rank, and NCCL_SOCKET_IFNAME to the interface that joins the namespaces",
                        _library_error(rank1)), rank1
    assert "missing rank(s) 1" in rank0, rank0


@pytest.mark.timeout(120)
def test_master_addr_that_is_not_rank_0s(one_machine):
    """MASTER_ADDR names node B: rank 0 (on node A) cannot serve there and says so at once; rank 1
    finds nothing listening and its deadline names the address and port."""
    b = one_machine.nodes[1]
    launches = _two_ranks(one_machine, timeout=3)
    for specs in launches.values():
        specs[0]["environ"]["MASTER_ADDR"] = b.addr
    records = launchers.run_job(one_machine, launches, launchers.host_env(), timeout=90)
    rank0, rank1 = _errors(records)
    assert rank0 == (f"OSError: [Errno 99] rank 0 cannot serve the unique id on {b.addr}:{PORT + 1} (MASTER_PORT + 1): "
                     f"{b.addr} is not an address of this machine; MASTER_ADDR must name the machine of rank 0"), rank0
    assert rank1.startswith(f"TimeoutError: unique id exchange: rank 1 could not get the id from rank 0 at "
                            f"{b.addr}:{PORT + 1} within 3 s (last error: "), rank1
    assert rank1.endswith(f": nothing listens on {b.addr}:{PORT + 1}; rank 0 has not started or has failed, or "
                          "MASTER_ADDR does not name rank 0's machine"), rank1


@pytest.mark.timeout(120)
def test_a_firewall_that_drops_the_id_port(cluster_factory):
    """Node A drops every packet to the id port: both ranks end at their deadline, naming the
    address and port."""
    cluster = cluster_factory()
    a = cluster.nodes[0]
    how = cluster.drop_tcp(a, PORT + 1)
    records = launchers.run_job(cluster, _two_ranks(cluster, timeout=3), launchers.host_env(), timeout=90)
    rank0, rank1 = _errors(records)
    assert rank0.startswith(f"TimeoutError: unique id exchange on {a.addr}:{PORT + 1}: rank(s) [1] did not connect "
                            "within 3 s"), rank0
    assert rank1.startswith(f"TimeoutError: unique id exchange: rank 1 could not get the id from rank 0 at "
                            f"{a.addr}:{PORT + 1} within 3 s"), rank1
    if how == "nft":  # a dropped SYN: the connection attempt times out
        assert rank1.endswith(f": {a.addr}:{PORT + 1} never answered; a firewall drops the connections, or no machine "
                              "has the address MASTER_ADDR names"), rank1


def _root_port(proc, log, wait=30.0):
    """The bootstrap root's port, from the log of the rank that made the id (it makes the id, and
    so starts its root, before it serves the exchange)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and (m := re.search(r"bootstrap root listening on port (\d+)", log.read_text())):
            return int(m.group(1))
        time.sleep(0.05)
    raise AssertionError(f"rank 0 did not report its bootstrap root within {wait:g} s "
                         f"(exit status {proc.poll()}): {log.read_text() if log.exists() else 'no log'}")


@pytest.mark.timeout(120)
def test_strangers_on_the_other_node_get_nothing(one_machine):
    """While rank 0 serves, a process on node B that is not a rank tries the id exchange (garbage,
    a wrong secret, a wrong size) and the host backend's bootstrap root (garbage, a forged
    hello): it gets neither the id nor a peer table, and rank 1, arriving after it, completes the
    job with rank 0."""
    a, b = one_machine.nodes
    launches = _two_ranks(one_machine, timeout=60)
    log = one_machine.dir / "rank0.log"
    rank0 = launchers.start(one_machine, (0, 0), launches[(0, 0)],
                            launchers.host_env(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="BOOTSTRAP", NCCL_DEBUG_FILE=log))
    root_port = _root_port(rank0, log)
    got = b.run([sys.executable, HERE / "stranger.py", a.addr, PORT + 1, root_port], env=launchers.host_env(),
                timeout=60)
    assert got.returncode == 0, got.stderr[-4000:]
    tried = json.loads(got.stdout.splitlines()[-1])
    rank1 = launchers.start(one_machine, (1, 0), launches[(1, 0)], launchers.host_env())
    records = launchers.collect({(0, 0): rank0, (1, 0): rank1}, launches, timeout=90)

    assert tried["exchange_garbage"] == "" and tried["exchange_wrong_size"] == "", tried  # closed, nothing sent
    assert tried["exchange_wrong_secret"].startswith("unique id exchange: rank 1 could not get the id from rank 0 at "
                                                     f"{a.addr}:{PORT + 1} within 2 s"), tried
    assert f"{a.addr}:{PORT + 1} does not know this job's NCCL4PY_ID_SECRET" in tried["exchange_wrong_secret"], tried
    assert tried["root_garbage"] == "", tried
    assert tried["root_forged_hello"]["type"] == 0x48454C4F + 3, tried  # ROOT_FAIL, not the table
    assert tried["root_forged_hello"]["text"].startswith("unique id rejected: no open id of this root has its "
                                                         "secret"), tried
    for node in range(2):
        rec = records[(node, 0)][0]
        assert "error" not in rec and rec["ok"] is True and rec["rank"] == node, rec
