"""Growing a communicator on the host backend through nccl.core: Communicator.get_unique_id and
grow (ncclCommGetUniqueId, ncclCommGrow); rank logic in ranks_grow.py."""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

pytest.importorskip("nccl.core._unique_id", reason="nccl.core is not installed")


@pytest.mark.timeout(90)
@pytest.mark.parametrize("old, new, coordinator", [(2, 3, 0), (2, 4, 1), (1, 2, 0), (3, 4, 2)])
def test_grow_then_collectives(run_ranks, tmp_path, old, new, coordinator):
    """Existing ranks keep their ranks, new ones join with the coordinator's id; allreduce,
    allgather and broadcast on the grown communicator; the parent still works."""
    harness.assert_clean(run_ranks(new, "ranks_grow:grow", timeout=75, init=False,
                     params={"old": old, "coordinator": coordinator, "dir": str(tmp_path)}))


@pytest.mark.timeout(90)
def test_grow_bad_input(run_ranks, tmp_path):
    harness.assert_clean(run_ranks(3, "ranks_grow:bad_input", timeout=75, init=False, params={"dir": str(tmp_path)}))


@pytest.mark.timeout(60)
def test_a_joiner_that_never_comes_times_out(run_ranks):
    results = harness.assert_clean(run_ranks(2, "ranks_grow:joiner_never_comes", timeout=45, init=False,
                               env={"NCCL_HOST_TIMEOUT": "3"}))
    assert [r.value["status"] for r in results] == [8, 8]  # ncclTimeout


@pytest.mark.timeout(60)
def test_abort_from_another_thread_ends_a_grow(run_ranks):
    harness.assert_clean(run_ranks(2, "ranks_grow:abort_during_grow", timeout=45, init=False))


@pytest.mark.timeout(60)
def test_a_joiner_killed_during_the_grow(run_ranks, tmp_path):
    harness.assert_clean(run_ranks(3, "ranks_grow:joiner_dies", timeout=45, init=False, expect_death=(2,),
                     params={"dir": str(tmp_path)}))


@pytest.mark.timeout(90)
@pytest.mark.parametrize("old, new", [(2, 3), (2, 4)])
def test_grow_through_the_bindings(run_ranks, tmp_path, old, new):
    harness.assert_clean(run_ranks(new, "ranks_grow:grow_bindings", timeout=75, init=False,
                     params={"old": old, "dir": str(tmp_path)}))
