"""nccl.core's C Communicator methods (collectives.c, resources.c) at 1-4 ranks on the host
backend, with numpy arrays, against numpy references (rank side: ranks_core.py)."""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

RANKS = [1, 2, 3, 4]


def _check(results):
    return harness.assert_clean(results, agree=("ncalls",))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("nranks", RANKS)
def test_reductions(run_ranks, nranks):
    """allreduce, reduce (roots 0, n-1, None), reduce_scatter: 10 dtypes (int8..uint64, fp16,
    bf16, fp32, fp64) x 5 ops, in and out of place, counts 0, 1, 7, 37."""
    _check(run_ranks(nranks, "ranks_core:reductions", timeout=150))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_bool_reductions(run_ranks, nranks):
    """Bool buffers reduce as logical or/and (SUM, PROD) and keep valid bools; AVG and a bool/uint8
    pair are refused."""
    _check(run_ranks(nranks, "ranks_core:bool_reductions", timeout=90))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("nranks", RANKS)
def test_data_movement(run_ranks, nranks):
    """broadcast, allgather, gather, scatter, alltoall (in and out of place, None off root) and a
    grouped send/recv ring; 10 dtypes."""
    _check(run_ranks(nranks, "ranks_core:data_movement", timeout=150))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 3])
def test_custom_ops(run_ranks, nranks):
    """create_pre_mul_sum in every scalar form used by allreduce/reduce; its checks and lifecycle."""
    _check(run_ranks(nranks, "ranks_core:custom_ops", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2])
def test_registration(run_ranks, nranks):
    """register_buffer handle lifecycle, register_window and signals to oneself, create_dev_comm
    on the host backend, resource construction rules."""
    results = _check(run_ranks(nranks, "ranks_core:registration", timeout=90))
    assert all(r.extra["register_window"] == "RegisteredWindowHandle" for r in results), results[0].extra


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_bad_input(run_ranks, nranks):
    """Every NcclInvalid of docs/compatibility.md#collectives with its exact message, and roots/peers out of range
    named before any library call."""
    _check(run_ranks(nranks, "ranks_core:bad_input", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2])
def test_refcounts(run_ranks, nranks):
    """Reference counts of the arrays unchanged over 10^4 allreduce calls and the error paths."""
    _check(run_ranks(nranks, "ranks_core:refcounts", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2])
def test_lifecycle(run_ranks, nranks):
    """Communicator.init and the context manager: destroy on exit (closing tracked resources),
    abort when an exception propagates, use after destroy."""
    _check(run_ranks(nranks, "ranks_core:lifecycle", timeout=90, init=False))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 3])
def test_rccl_extensions(run_ranks, nranks, tmp_path):
    """allreduce_with_bias and alltoallv with the host backend acting as RCCL."""
    _check(run_ranks(nranks, "ranks_core:rccl_extensions", timeout=90, init=False,
                     env={"NCCL_HOST_FLAVOR": "rccl"}, params={"dir": str(tmp_path)}))


@pytest.mark.timeout(60)
def test_gil_released_in_collective(run_ranks):
    """A thread keeps running while allreduce blocks in the library waiting for a late peer."""
    results = _check(run_ranks(2, "ranks_core:gil_release", timeout=45))
    assert results[0].extra["gil"]["ticks_during_call"] > 0
