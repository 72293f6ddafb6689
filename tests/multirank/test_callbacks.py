"""Callbacks into Python during a call (issue 47; docs/architecture.md#callbacks-into-python): the
four walks that crashed the interpreter and the two calls that reached the library with a
destroyed communicator, each now a Python exception with its exact message (rank logic in
ranks_callbacks.py). The generated catalogue of hostile objects is tests/hostile."""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)


@pytest.mark.timeout(60)
def test_wait_signal_descriptor_list_emptied_by_a_property(run_ranks):
    harness.assert_clean(run_ranks(1, "ranks_callbacks:wait_signal_list_cleared", timeout=45, init=False))


@pytest.mark.timeout(60)
def test_comm_init_all_devlist_emptied_by_an_index(run_ranks):
    harness.assert_clean(run_ranks(1, "ranks_callbacks:init_all_devlist_cleared", timeout=45, init=False))


@pytest.mark.timeout(60)
def test_alltoallv_counts_emptied_by_an_index(run_ranks, tmp_path):
    harness.assert_clean(run_ranks(2, "ranks_callbacks:alltoallv_counts_cleared", timeout=45, init=False,
                                   env={"NCCL_HOST_FLAVOR": "rccl"}, params={"dir": str(tmp_path)}))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2])
def test_destroy_or_abort_from_the_calls_own_callback_is_refused(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_callbacks:destroy_from_a_callback", timeout=45, init=False))


@pytest.mark.timeout(60)
def test_a_callback_cannot_free_a_resolved_buffer(run_ranks):
    harness.assert_clean(run_ranks(1, "ranks_callbacks:buffers_pinned_during_the_call", timeout=45, init=False))
