"""nccl4py 0.6.0 call patterns at 1-4 ranks on the host backend (rank side: ranks_core_config.py):
config= on every collective (None, default, filled) against numpy, with numpy arrays and torch
tensors; properties, teams and versions beside 0.3.1-style Communicator.init in one program."""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

RANKS = [1, 2, 3, 4]


def _check(results):
    harness.assert_clean(results, agree=("ncalls",))
    assert results[0].value["ncalls"] > 0
    return results


@pytest.mark.timeout(180)
@pytest.mark.parametrize("nranks", RANKS)
def test_config_collectives(run_ranks, nranks):
    _check(run_ranks(nranks, "ranks_core_config:config_collectives", timeout=150))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 3])
def test_both_conventions_in_one_program(run_ranks, nranks):
    _check(run_ranks(nranks, "ranks_core_config:both_conventions", timeout=90, init=False))
