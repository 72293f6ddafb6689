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


@pytest.fixture
def run_ranks():
    """run_ranks(nranks, target, timeout=60, **kw) -> [RankResult]; see harness.launch."""

    def run(nranks, target, timeout=60, **kw):
        return harness.launch(nranks, target, timeout=timeout, **kw)

    return run
