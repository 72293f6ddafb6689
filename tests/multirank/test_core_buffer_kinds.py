"""nccl.core methods on numpy, torch CPU, memoryview and DLPack buffers, and refcount loops of
every method, at 1-4 ranks on the host backend (rank logic in ranks_core_buffers.py)."""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_every_method_on_every_buffer_kind(run_ranks, nranks):
    results = harness.assert_clean(run_ranks(nranks, "ranks_core_buffers:every_method", timeout=100, init=False))
    assert {"numpy", "memoryview", "dlpack"} <= set(results[0].value["kinds"])


@pytest.mark.timeout(180)
@pytest.mark.parametrize("nranks", [1, 2])
def test_reference_counts_over_every_method(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_core_buffers:refcounts_every_method", timeout=160, init=False))
