"""The rank-side checks under an MPI launcher instead of run_ranks:

    mpirun -n N python -m pytest tests/multirank -m mpi

Rank 0 creates the unique id and broadcasts it with mpi4py; every rank then runs the same check
functions as the process-launcher tests, and the ranks agree on the verdict (an allgather of the
failures), so all ranks pass or fail together.  Skipped cleanly without mpi4py.
"""

import os

import pytest

pytestmark = pytest.mark.mpi

MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed")

os.environ["NCCL_LIBRARY"] = "host"

import nccl.bindings.nccl as b  # noqa: E402
import ranks_collectives  # noqa: E402
import ranks_groups  # noqa: E402
from rank_main import RankContext, init_comm  # noqa: E402


@pytest.fixture(scope="module")
def mpi_ctx():
    world = MPI.COMM_WORLD
    uid = bytes(b.get_unique_id()) if world.rank == 0 else None
    uid = world.bcast(uid, root=0)
    comm = init_comm(world.size, uid, world.rank)
    ctx = RankContext(world.rank, world.size, uid, None, comm)
    yield ctx
    world.Barrier()
    b.comm_destroy(comm)


def _run(ctx, func, params=None):
    ctx.params = params
    value = func(ctx)
    world = MPI.COMM_WORLD
    failures = [f for v in world.allgather(value.get("failures", [])) for f in v]
    assert not failures, "\n".join(failures[:60])
    if "digest" in value:
        digests = world.allgather(value["digest"])
        assert len(set(digests)) == 1, f"ranks disagree bit for bit: {digests}"
    return value


@pytest.mark.timeout(120)
@pytest.mark.parametrize("check", [
    ranks_collectives.reductions, ranks_collectives.data_movement, ranks_collectives.large,
    ranks_collectives.spec_examples,
    ranks_groups.mixed_group, ranks_groups.p2p_all_pairs, ranks_groups.group_error_discards,
    ranks_groups.split, ranks_groups.premulsum,
], ids=lambda f: f.__name__)
def test_check_under_mpi(mpi_ctx, check):
    _run(mpi_ctx, check)


@pytest.mark.timeout(60)
def test_mismatch_under_mpi(mpi_ctx):
    if mpi_ctx.size < 2:
        pytest.skip("a mismatch needs two ranks")
    value = ranks_groups.mismatch(mpi_ctx)
    bad = {w: g for w, g in value.items() if g["type"] != "NCCLInvalidUsage"}
    everyone = MPI.COMM_WORLD.allgather(bad)
    assert not any(everyone), everyone
