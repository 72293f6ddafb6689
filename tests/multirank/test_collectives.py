"""Every collective x datatype x op at 1, 2, 3 and 4 ranks against numpy references.

One launch per (rank count, family) runs the whole matrix on every rank (see ranks_collectives.py);
each rank compares its outputs with reference.py bit for bit, and the outputs that every rank
must share are hashed so the ranks can be compared with each other.
"""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

RANKS = [1, 2, 3, 4]


def _check(results):
    return harness.assert_clean(results, agree=("digest", "ncalls"))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", RANKS)
def test_reductions(run_ranks, nranks):
    """AllReduce, Reduce (roots 0, n-1), ReduceScatter; 12 types x 5 ops; in/out of place;
    counts 0 (NULL buffers), 1 and 37."""
    _check(run_ranks(nranks, "ranks_collectives:reductions", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", RANKS)
def test_data_movement(run_ranks, nranks):
    """Broadcast, Bcast, Gather, Scatter (roots 0, n-1, NULL off-root buffers), AllGather,
    AlltoAll, send/recv rings (grouped and chained); 12 types; counts 0, 1 and 37."""
    _check(run_ranks(nranks, "ranks_collectives:data_movement", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_large_counts(run_ranks, nranks):
    """Counts beyond one shared-memory chunk and one p2p ring."""
    _check(run_ranks(nranks, "ranks_collectives:large", timeout=90))



@pytest.mark.timeout(180)
@pytest.mark.parametrize("nranks", [4, 5])
def test_allreduce_over_many_ranks(run_ranks, nranks):
    """AllReduce from 256 KiB at 4 and 5 ranks (a ReduceScatter and an AllGather): every type x op,
    in and out of place, counts that n divides and does not."""
    _check(run_ranks(nranks, "ranks_collectives:split_allreduce", timeout=150))


@pytest.mark.timeout(120)
def test_large_outputs_streamed(run_ranks):
    """Outputs of 16 MiB and more (written with non-temporal stores on the segment path), at 3
    ranks, where an AlltoAll's packed sub-blocks sit both before and after the skipped own one."""
    nranks = 3
    _check(run_ranks(nranks, "ranks_collectives:streamed", timeout=90))

@pytest.mark.timeout(60)
@pytest.mark.parametrize("chunk", ["auto", "64K"])
def test_broadcast_root_streams_its_steps(run_ranks, chunk):
    """A Broadcast root writes steps of 16-512 KiB with non-temporal stores: every size at the
    edges, at 3 ranks; with 64 KiB slots (32 KiB steps) a 300 KB broadcast takes ten steps."""
    env = {} if chunk == "auto" else {"NCCL_HOST_CHUNK_BYTES": "65536"}
    _check(run_ranks(3, "ranks_collectives:staged", timeout=45, env=env))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks,steps", [(2, None), (3, "4"), (2, "5")])
def test_rooted_collectives_pipelined(run_ranks, nranks, steps):
    """Broadcast, Reduce, Gather and Scatter cut into pipeline steps (the default: slot-sized
    steps; NCCL_HOST_PIPELINE_STEPS=4, and 5: steps that do not divide the counts), and
    AllGather/AlltoAll, whose own block is copied between publishing a step and waiting for it."""
    env = {} if steps is None else {"NCCL_HOST_PIPELINE_STEPS": steps}
    _check(run_ranks(nranks, "ranks_collectives:pipelined", timeout=100, env=env))


@pytest.mark.timeout(120)
def test_pipeline_steps_are_rank0s(run_ranks):
    """Rank 0 without pipelining, the others with seven steps: the steps are rank 0's on every
    rank, so the rooted collectives still agree and complete."""
    _check(run_ranks(3, "ranks_collectives:pipeline_of_rank0", timeout=100, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", RANKS)
def test_numerics_worked_examples(run_ranks, nranks):
    """fp8 Avg/saturation, fp16 overflow, NaN-suppressing Max/Min, signed zeros, integer Avg."""
    _check(run_ranks(nranks, "ranks_collectives:spec_examples", timeout=45))
