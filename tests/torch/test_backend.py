"""The "nccl4py" torch.distributed backend at 2 and 3 ranks: every c10d operation of
rank_checks.py against its numpy reference, once through nccl.core (the path of a machine without
a GPU) and once through the second handle on the host backend (nccl.torch._hostlib: the path of
CPU tensors on a GPU machine). Each launch runs every check; a test per check reads its verdict.
"""

import pytest

from launch import run_ranks

pytest.importorskip("torch")

import rank_checks  # noqa: E402

CONFIGS = [(2, "core"), (3, "core"), (2, "ctypes")]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    cache = {}

    def get(nranks, mode):
        if (nranks, mode) not in cache:
            reports, _ = run_ranks("rank_checks.py", nranks, tmp_path_factory.mktemp(f"checks{nranks}{mode}"), mode)
            cache[nranks, mode] = reports
        return cache[nranks, mode]

    return get


@pytest.mark.parametrize("check", sorted(rank_checks.CHECKS))
@pytest.mark.parametrize("nranks,mode", CONFIGS, ids=[f"{n}-{m}" for n, m in CONFIGS])
def test_operation(verdicts, nranks, mode, check):
    failures = {rank: report[check] for rank, report in enumerate(verdicts(nranks, mode)) if report[check] != "ok"}
    assert not failures, "\n".join(f"rank {rank}: {text}" for rank, text in failures.items())
