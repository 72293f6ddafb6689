"""Fixtures of the multi-rank suite: run_ranks (the launcher) and a /dev/shm leftover check."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ["NCCL_LIBRARY"] = "host"
os.environ.setdefault("NCCL_HOST_TIMEOUT", "30")

import harness  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi: requires mpirun and >=2 ranks")


@pytest.fixture(autouse=True)
def no_shm_leftovers():
    """Every test leaves no /dev/shm/nccl-host-* segment behind (crashes included). Only names
    this test could have made count: its own, its ranks', or those of a process that is gone; a
    live process elsewhere on the machine may create names at any time."""
    before = harness.shm_segment_names()
    harness.started_pids.clear()
    yield
    left = harness.leftover_segments(before, harness.shm_segment_names(), harness.started_pids)
    assert not left, f"shared-memory segments left behind: {left}"


# The host backend moves large messages by single-copy reads of the peers' buffers and the rest
# through its shared segment (NCCL_HOST_DIRECT, src/host/transport.c; docs/host-backend.md). Every
# multi-rank test runs under both transports, forced for every message size: "direct"
# (NCCL_HOST_DIRECT=1) and "segment" (NCCL_HOST_DIRECT=0); the library's default ("auto") takes
# one of the two per communicator. test_transport.py sets the variable itself, test by test, and
# runs once. Single-rank cases run once (see below), and .ci/interpreters, which repeats the suite
# on other CPythons for the extension's sake, runs only the "segment" half.
ONE_TRANSPORT = {"test_transport", "test_rma", "test_faults", "test_callbacks"}


def pytest_generate_tests(metafunc):
    if "transport" in metafunc.fixturenames and metafunc.module.__name__.rsplit(".", 1)[-1] not in ONE_TRANSPORT:
        metafunc.parametrize("transport", ["direct", "segment"])


def pytest_collection_modifyitems(config, items):
    """A single rank has no peer to read from: its "direct" run would repeat the "segment" one."""
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        (drop if params.get("transport") == "direct" and params.get("nranks") == 1 else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def transport():
    """The transport a test's ranks use (see harness.TRANSPORTS); parametrized outside ONE_TRANSPORT."""
    return "auto"


@pytest.fixture
def run_ranks(transport):
    """run_ranks(nranks, target, timeout=60, **kw) -> [RankResult]; see harness.launch. The ranks
    get the transport's NCCL_HOST_DIRECT unless env sets it."""

    def run(nranks, target, timeout=60, env=None, **kw):
        env = dict(env or {})
        if harness.TRANSPORTS[transport] is not None:
            env.setdefault("NCCL_HOST_DIRECT", harness.TRANSPORTS[transport])
        return harness.launch(nranks, target, timeout=timeout, env=env, **kw)

    return run
