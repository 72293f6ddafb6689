"""Fixtures of the multi-host tests: two nodes made of namespaces (tests/netns.py), skipped with
the reason where this machine cannot make them.

* ``one_machine``: a Cluster whose nodes share this machine's /dev/shm and hostname (network
  namespaces only), one link; module-scoped, since its tests change nothing in it.
* ``two_machines``: the same with ``own_host=True``: each node its own hostname and /dev/shm.
* ``cluster_factory``: ``cluster_factory(**Cluster arguments)`` for a test that changes its
  cluster (a firewall rule) or needs other links; closed after the test.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import netns  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _namespaces_available():
    reason = netns.unavailable()
    if reason is not None:
        pytest.skip(f"no network namespaces here: {reason}")


@pytest.fixture(scope="module")
def one_machine(_namespaces_available):
    with netns.Cluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def two_machines(_namespaces_available):
    with netns.Cluster(own_host=True) as cluster:
        yield cluster


@pytest.fixture
def cluster_factory(_namespaces_available):
    made = []

    def make(**kwargs):
        cluster = netns.Cluster(**kwargs).__enter__()
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.close()
