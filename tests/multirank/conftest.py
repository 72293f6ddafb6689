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


def _shm_names():
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("nccl-host-")}
    except FileNotFoundError:
        return set()


def _creator(name):
    """The pid in nccl-host-<uid>-<pid>-<random>, or None."""
    parts = name.split("-")
    return int(parts[3]) if len(parts) == 5 and parts[3].isdigit() else None


@pytest.fixture(autouse=True)
def no_shm_leftovers():
    """Every test leaves no /dev/shm/nccl-host-* segment behind (crashes included). Only names
    created by this process or the ranks it started count: other programs on the machine may
    hold segments of their own meanwhile."""
    before = _shm_names()
    yield
    ours = harness.LAUNCHED_PIDS | {os.getpid()}
    left = {n for n in _shm_names() - before if _creator(n) in ours}
    assert not left, f"shared-memory segments left behind: {sorted(left)}"


# The host backend moves large messages by single-copy reads of the peers' buffers and the rest
# through its shared segment (NCCL_HOST_DIRECT, src/host/transport.c). The suites that exercise
# the data path (every collective x type x op, groups, p2p, abort, peer death, mismatches) run
# under both transports, forced for every message size: "direct" (NCCL_HOST_DIRECT=1) and
# "segment" (NCCL_HOST_DIRECT=0). The other multi-rank suites test the bindings, launchers and
# buffer kinds above the same calls; they run once, with the library's default ("auto": single
# copy from 64 KiB), which keeps the suite's time within CI's budget.
TRANSPORTS = {"auto": None, "direct": "1", "segment": "0"}
BOTH_TRANSPORTS = {"test_collectives", "test_groups_and_lifecycle"}


def pytest_generate_tests(metafunc):
    if "transport" in metafunc.fixturenames and metafunc.module.__name__.rsplit(".", 1)[-1] in BOTH_TRANSPORTS:
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
    """The transport a test's ranks use (see TRANSPORTS); parametrized for BOTH_TRANSPORTS."""
    return "auto"


@pytest.fixture
def run_ranks(transport):
    """run_ranks(nranks, target, timeout=60, **kw) -> [RankResult]; see harness.launch. The ranks
    get the transport's NCCL_HOST_DIRECT unless env sets it."""

    def run(nranks, target, timeout=60, env=None, **kw):
        env = dict(env or {})
        if TRANSPORTS[transport] is not None:
            env.setdefault("NCCL_HOST_DIRECT", TRANSPORTS[transport])
        return harness.launch(nranks, target, timeout=timeout, env=env, **kw)

    return run
