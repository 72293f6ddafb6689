"""Communicator.from_env across two nodes (network namespaces of this machine sharing its /dev/shm,
tests/netns.py) on the host backend: every launcher convention from_env reads, MASTER_ADDR as an
IPv4 address, an IPv6 address and a host name, at 2 nodes x 1 and x 2 ranks.

The launches run in one job of four processes (two per node, tests/multihost/rank_job.py), one
launch after another, each on ports of its own; every launch is then a test of its own. The
nodes' network namespaces are the cluster's alone, so fixed ports cannot collide with anything.
"""

import pytest

import launchers

SECRET = "multihost-secret"
# (convention, MASTER_ADDR kind, ranks per node)
LAUNCHES = [
    ("torchrun", "ipv4", 2), ("torchrun", "ipv6", 1), ("torchrun", "name", 2),
    ("srun", "name", 2), ("srun", "ipv4", 1),
    ("pmi", "ipv6", 2), ("pmi", "name", 1),
    ("ompi", "ipv4", 2), ("ompi", "ipv6", 1),
]
BASE_PORT = 29400
WINDOWS = "torchrun-ipv4-2x2"  # the launch that also registers windows (rank_job.py)


def _name(launch):
    convention, address, per_node = launch
    return f"{convention}-{address}-2x{per_node}"


def _port(i):
    return BASE_PORT + 10 * i  # MASTER_PORT; the id exchange uses the next port


@pytest.fixture(scope="module")
def job(one_machine):
    """{launch name: {(node, slot): record}} of every launch in LAUNCHES, plus one without a secret."""
    launches = {(node, slot): [] for node in range(2) for slot in range(2)}
    plan = [(_name(launch), launchers.layout(*launch, one_machine, _port(i), secret=SECRET))
            for i, launch in enumerate(LAUNCHES)]
    plan.append(("no-secret", launchers.layout("torchrun", "ipv4", 1, one_machine, _port(len(LAUNCHES)))))
    for name, layout in plan:
        for key, environ in layout.items():
            launches[key].append({"name": name, "environ": environ, "timeout": 30, "window": name == WINDOWS})
    records = launchers.run_job(one_machine, launches, launchers.host_env(), timeout=240)
    out = {}
    for key, recs in records.items():
        for rec in recs:
            out.setdefault(rec["name"], {})[key] = rec
    return out


@pytest.mark.timeout(300)
@pytest.mark.parametrize("launch", LAUNCHES, ids=_name)
def test_from_env_across_two_nodes(job, launch):
    """Every rank gets rank 0's id over the veth (authenticated by NCCL4PY_ID_SECRET), the host
    backend's bootstrap binds each node's own interface, the allreduce sums over both nodes, and
    each rank's local_rank is its place on its node; in WINDOWS, the ranks also map each other's
    windows."""
    convention, _, per_node = launch
    _, kind, source = launchers.CONVENTIONS[convention]
    records = job[_name(launch)]
    nranks = 2 * per_node
    for (node, slot), rec in records.items():
        if slot >= per_node:
            assert rec.get("skipped"), rec
            continue
        assert "error" not in rec, rec
        assert rec["kind"] == kind and (source is None or rec["source"] == source), rec
        assert (rec["rank"], rec["nranks"], rec["local_rank"]) == (node * per_node + slot, nranks, slot), rec
        assert rec["ok"] is True, rec
        if _name(launch) == WINDOWS:  # the windows' blocks were mapped across the nodes too
            assert rec["window_ok"] is True, rec


@pytest.mark.timeout(300)
def test_from_env_across_nodes_needs_a_secret(job):
    """Without NCCL4PY_ID_SECRET the exchange on a non-loopback MASTER_ADDR would not be
    authenticated: every rank refuses at once and says what to set."""
    for (node, slot), rec in job["no-secret"].items():
        if slot > 0:
            continue
        assert rec["error"].startswith("ExchangeError: the unique id exchange over TCP on 10.77.0.1 would not be "
                                       "authenticated: set NCCL4PY_ID_SECRET to the same secret on every rank"), rec
