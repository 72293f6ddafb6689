"""Faults and misuse on the host backend: blame after a kill -9, and misuse of the one-sided
surface and of groups (rank side: ranks_faults.py, ranks_misuse.py).

Blame (docs/host-backend.md#peer-death-and-abort): one rank of a 3- or 4-rank
job is killed at a random moment of a put_signal(next)/wait_signal(prev) ring, of an AllReduce
loop or of a grouped send/recv ring; the survivors leave in random ways (abort, destroy, or end
without leaving) once they failed, and every survivor's error must name the killed rank, with its
pid, as the first cause. The trials run in one launcher process that forks their ranks
(ranks_faults.py), so a trial costs a fraction of a second; the seed is in every failure."""

import os
import random

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

LEAVES = ("abort", "destroy", "exit")


def _trials(seed, op, count):
    rnd = random.Random(seed)
    trials = []
    for i in range(count):
        n = 3 + i % 2
        trials.append({"op": op, "n": n, "victim": rnd.randrange(n), "delay": round(rnd.uniform(0.0, 0.25), 3),
                       "leave": [rnd.choice(LEAVES) for _ in range(n)]})
    return trials


def _run(run_ranks, op, count):
    seed = int.from_bytes(os.urandom(4), "little")
    res = run_ranks(1, "ranks_faults:kill_trials", timeout=300, init=False,
                    params={"trials": _trials(seed, op, count)})
    out = res[0].value
    assert out["trials"] == count, (seed, out)
    assert not out["failures"], f"seed {seed}:\n" + "\n".join(out["failures"][:20])
    assert out["stragglers"] == 0, (seed, out)
    lat = sorted(out["latency_ms"])
    print(f"\n{op}: {count} trials at 3 and 4 ranks (seed {seed}), every survivor named the killed rank; "
          f"kill to error: median {lat[len(lat) // 2]} ms, max {lat[-1]} ms over {len(lat)} survivors")
    return out


@pytest.mark.timeout(240)
@pytest.mark.parametrize("op", ["ring", "allreduce", "sendrecv"])
def test_survivors_name_the_killed_rank(run_ranks, op):
    """A few trials per workload in the fast tier (3 and 4 ranks alternate)."""
    _run(run_ranks, op, 12 if op != "sendrecv" else 6)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("op", ["ring", "allreduce"])
def test_survivors_name_the_killed_rank_sweep(run_ranks, op):
    """The larger sweep: 100 trials per workload."""
    _run(run_ranks, op, 100)


# ---- misuse of the one-sided surface and of groups (ranks_misuse.py) ----

@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_registration_refuses_memory_that_is_not_live(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_misuse:freed_memory_bindings", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2])
def test_core_refuses_freed_buffers(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_misuse:freed_memory_core", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_windows_after_destroy_abort_deregistration_fork_and_in_groups(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_misuse:windows_misuse", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_grouped_send_and_recv_over_overlapping_buffers(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_misuse:grouped_overlap", timeout=90, params={"checks": 1}))


@pytest.mark.timeout(120)
def test_grouped_overlap_is_not_checked_under_host_checks_0(run_ranks):
    harness.assert_clean(run_ranks(2, "ranks_misuse:grouped_overlap", timeout=90, params={"checks": 0},
                                   env={"NCCL_HOST_CHECKS": "0"}))
