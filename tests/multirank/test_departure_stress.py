"""Departure stress (issue 46; rank side in ranks_departure.py): random programs at 2 to 8 ranks
(collectives of every kind, point-to-point, groups, one-sided rounds, split, shrink and grown
communicators) with random delays and SIGSTOP/SIGCONT, each rank leaving as soon as its own last
call returned. A departure may fail a peer's call only when that call still needs something the
departed rank had not provided (docs/host-backend.md#what-a-departure-means-for-a-peers-call),
which in a correct program never happens: every call of every rank must return numpy's answer.

The kill variant kills one rank with SIGKILL, or has it abort its communicator, at a random
moment: every survivor must fail within seconds, naming that rank's pid as the first cause
(docs/host-backend.md#peer-death-and-abort), and never return wrong data.

Trials are seeded: trial i runs the program of seed S + i. A failure names its seed; rerun it
with NCCL4PY_DEPARTURE_SEED=<seed> NCCL4PY_DEPARTURE_TRIALS=1. NCCL4PY_DEPARTURE_TRIALS sets the
number of trials of each test (the on-demand run: 10000), which otherwise is sized for CI."""

import os

import pytest

import harness  # noqa: F401 - tests/multirank is on sys.path (conftest.py)

pytest.importorskip("nccl.core._unique_id", reason="nccl.core is not installed")

# Trials per test in CI: about 0.4 s each on a loaded 2-CPU machine, so 75-80 s for the four
# together. The segment path carries the eager Broadcast, where 7% of trials failed before ranks
# that leave stopped failing their peers (docs/host-backend.md#what-a-departure-means-for-a-peers-call).
CI_TRIALS = {("segment", False): 100, ("direct", False): 40, ("segment", True): 30, ("direct", True): 15}
ON_DEMAND = os.environ.get("NCCL4PY_DEPARTURE_TRIALS")


def _trials(transport, kill):
    return int(ON_DEMAND) if ON_DEMAND else CI_TRIALS[(transport, kill)]


def _limit_s(count):
    """The launcher's deadline: 7 s a trial on average, over 15 times what one takes (a trial
    that hangs is also stopped on its own after ranks_departure.TRIAL_LIMIT_S)."""
    return 60 + 7 * count


PYTEST_LIMIT_S = _limit_s(max(_trials(t, k) for t, k in CI_TRIALS)) + 60


def _first_seed():
    given = os.environ.get("NCCL4PY_DEPARTURE_SEED")
    return int(given) if given else int.from_bytes(os.urandom(3), "little") * 1000


def _run(run_ranks, transport, kill):
    count = _trials(transport, kill)
    seed = _first_seed()
    # Under "direct", sends up to 64 KiB complete once in the ring (the rest go single-copy), so a
    # sender may leave before its receiver took the message.
    env = {"NCCL_HOST_P2P_EAGER": "65536"} if transport == "direct" else {}
    res = run_ranks(1, "ranks_departure:trials", timeout=_limit_s(count), init=False, env=env,
                    params={"seed": seed, "count": count, "kill": kill})
    out = res[0].value
    what = "kill trials" if kill else "trials"
    assert out is not None, f"the launcher failed (seeds {seed}..{seed + count - 1}): {res[0].error}"
    seeds = sorted({s for s, _ in out["failures"]})
    lat = sorted(out["latency_ms"])
    print(f"\n{transport} {what}: {out['trials']} (seeds {seed}..{seed + count - 1}), {len(seeds)} failed; "
          f"ranks {dict(sorted(out['sizes'].items()))}, {out['grown']} grown, {out['stopped']} with SIGSTOP; "
          f"calls {out['calls']}"
          + (f"; kill to error: median {lat[len(lat) // 2]} ms, max {lat[-1]} ms over {len(lat)} survivors"
             if lat else ""))
    assert out["trials"] == count
    assert not out["failures"], (
        f"{len(seeds)} of {count} {what} failed (rerun one with NCCL4PY_DEPARTURE_SEED=<seed> "
        f"NCCL4PY_DEPARTURE_TRIALS=1): seeds {seeds[:20]}\n"
        + "\n".join(f"seed {s}: {w}" for s, w in out["failures"][:20]))


@pytest.mark.timeout(PYTEST_LIMIT_S)
def test_ranks_that_leave_when_done_fail_no_peer(run_ranks, transport):
    _run(run_ranks, transport, kill=False)


@pytest.mark.timeout(PYTEST_LIMIT_S)
def test_a_killed_rank_is_named_by_every_survivor(run_ranks, transport):
    _run(run_ranks, transport, kill=True)
