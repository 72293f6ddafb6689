"""nccl.core.Communicator lifecycle on the host backend (rank logic in ranks_core_lifecycle.py)."""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

pytest.importorskip("nccl.core._unique_id", reason="nccl.core is not installed")

RANKS = [1, 2, 3, 4]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 3])
def test_init_queries_repr_and_use_after_destroy(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_core_lifecycle:init_and_queries", timeout=45, init=False))


@pytest.mark.timeout(60)
def test_unique_id_and_config_argument_checks(run_ranks):
    harness.assert_clean(run_ranks(1, "ranks_core_lifecycle:bad_ids", timeout=45, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2])
def test_init_with_a_list_of_ids(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_core_lifecycle:several_ids", timeout=45, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", RANKS)
def test_split_nocolor_and_shrink(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_core_lifecycle:split_and_shrink", timeout=45, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_nonblocking_init_and_split(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_core_lifecycle:nonblocking", timeout=45, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1])  # one rank: an abort makes its peers fail (by design)
def test_context_manager_aborts_when_an_exception_propagates(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_core_lifecycle:context_manager_aborts_on_error", timeout=45, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2])
def test_garbage_collection_warns_and_never_tears_down(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_core_lifecycle:gc_warns_without_collective", timeout=45, init=False))


@pytest.mark.timeout(60)
def test_abort_from_another_thread_unblocks_a_stuck_allreduce(run_ranks):
    harness.assert_clean(run_ranks(2, "ranks_core_lifecycle:abort_from_another_thread", timeout=45, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ndev", [2, 3])
def test_init_all_in_one_process(run_ranks, ndev):
    harness.assert_clean(run_ranks(1, "ranks_core_lifecycle:init_all", timeout=45, init=False, params={"ndev": ndev}))
