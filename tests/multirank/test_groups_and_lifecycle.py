"""Groups, communicator lifecycle, PreMulSum and faults through the bindings on the host backend.

Rank logic lives in ranks_groups.py (ranks_handles.py for the Comm objects); every test here
launches its ranks with run_ranks, and the autouse fixture of conftest.py checks that no
/dev/shm/nccl-host-* segment is left behind.
"""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

RANKS = [1, 2, 3, 4]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", RANKS)
def test_mixed_collectives_in_one_nested_group(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_groups:mixed_group", timeout=45))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 3, 4])
def test_send_recv_all_pairs_and_ordering_across_groups(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_groups:p2p_all_pairs", timeout=45))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2])
def test_error_inside_group_discards_the_group(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_groups:group_error_discards", timeout=45))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ndev", [2, 3])
def test_comm_init_all_driven_by_one_thread(run_ranks, ndev):
    """Threads-as-ranks in one process (a subprocess, so the test process stays clean)."""
    harness.assert_clean(run_ranks(1, "ranks_groups:init_all_one_thread", timeout=45, init=False,
                     params={"ndev": ndev}))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", RANKS)
def test_comm_split_colour_key_and_nocolor(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_groups:split", timeout=45))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_premulsum_per_rank_scalars(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_groups:premulsum", timeout=45))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("eager", ["1", "0"])
@pytest.mark.parametrize("nranks", [2, 3])
def test_mismatched_calls_raise_invalid_usage(run_ranks, nranks, eager):
    """Every mismatch is reported on every rank at the call itself, except that with the eager
    Broadcast (NCCL_HOST_BCAST_EAGER=1, the default) a root that returned before its peers
    arrived reports it at its next call: with every rank naming itself root, possibly all."""
    results = run_ranks(nranks, "ranks_groups:mismatch", timeout=45, env={"NCCL_HOST_BCAST_EAGER": eager})
    for r in results:
        for what, got in r.value.items():
            assert got["type"] == "NCCLInvalidUsage", f"rank {r.rank} {what} mismatch: {got}"
            if what.startswith("zero count"):
                assert "count is 0 on rank" in got["msg"] or " but 0 on rank" in got["msg"], got
            if eager == "0" or what != "root":
                assert got["at"] == "same call", f"rank {r.rank} {what} mismatch: {got}"
            assert got["elapsed"] < 10, f"rank {r.rank} {what} mismatch took {got['elapsed']:.1f} s"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("next_call", ["allreduce", "send"])
@pytest.mark.parametrize("nranks", [2, 3])
def test_eager_broadcast_root(run_ranks, nranks, next_call):
    """The eager Broadcast root (segment path): its buffer is reusable as soon as it returns (the
    others read the data after it overwrote its buffer), and a mismatch its peers make after it
    returned is reported on it at its next call, with the mismatch texts of the backend."""
    res = run_ranks(nranks, "ranks_groups:eager_broadcast", timeout=45, params={"next": next_call},
                    env={"NCCL_HOST_DIRECT": "0"})
    last = nranks - 1
    text = "cross-rank mismatch in ncclBroadcast #2: count is {} on rank {} but {} on rank {}"
    for r in res[1:]:
        assert r.value["data_ok"], f"rank {r.rank} received the root's overwritten buffer"
    root = res[0].value
    assert root["call"] == {"type": None}, root
    assert root["next"]["type"] == "NCCLInvalidUsage", root
    # its own check's text, or the same fact as the last rank recorded it first for every rank
    assert (text.format(1000, 0, 999, last) in root["next"]["msg"]
            or f"failed: {text.format(999, last, 1000, 0)}" in root["next"]["msg"]), root
    got = res[last].value["call"]
    assert got["type"] == "NCCLInvalidUsage" and text.format(999, last, 1000, 0) in got["msg"], got
    for r in res[1:last]:  # matched the root: at this call if the last rank's call was there, else at the next
        got = r.value["next"] if r.value["call"]["type"] is None else r.value["call"]
        assert got["type"] == "NCCLInvalidUsage", r.value
        assert "cross-rank mismatch in ncclBroadcast #2" in got["msg"], r.value


@pytest.mark.timeout(60)
@pytest.mark.parametrize("leave", ["finalize", "destroy"])
def test_eager_broadcast_root_that_leaves_at_once(run_ranks, leave):
    """An eager Broadcast root that finalizes or destroys the communicator right after returning
    (finalize waits until its peers are in the step, destroy does not): every rank's Broadcasts
    succeed with the root's data."""
    res = run_ranks(3, "ranks_groups:eager_root_leaves", timeout=45, params={"leave": leave},
                    env={"NCCL_HOST_DIRECT": "0"})
    ok = {"type": None}
    for r in res:
        assert r.value["data_ok"], r.value
        assert all(v == ok for k, v in r.value.items() if k != "data_ok"), r.value


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [2, 3])
def test_killed_peer_raises_remote_error_well_before_deadline(run_ranks, nranks):
    deadline = 30
    results = run_ranks(nranks, "ranks_groups:killed_peer", timeout=45, expect_death={nranks - 1},
                        env={"NCCL_HOST_TIMEOUT": str(deadline)})
    assert results[-1].returncode == -9
    for r in results[:-1]:
        v = r.value
        assert v["type"] in ("NCCLRemoteError", "NCCLError"), f"rank {r.rank}: {v}"
        assert v["elapsed"] < deadline / 3, f"rank {r.rank} took {v['elapsed']:.1f} s to notice"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [2, 3])
def test_eager_broadcast_root_notices_a_killed_peer_at_its_next_call(run_ranks, nranks):
    """The Broadcast root waited for nobody; its next call waits for the dead rank's descriptor
    of that Broadcast and fails with ncclRemoteError long before the deadline, as does the
    next call of a rank that received."""
    deadline = 30
    results = run_ranks(nranks, "ranks_groups:eager_root_peer_killed", timeout=45, expect_death={nranks - 1},
                        env={"NCCL_HOST_TIMEOUT": str(deadline), "NCCL_HOST_DIRECT": "0"})
    assert results[-1].returncode == -9
    for r in results[:-1]:
        v = r.value
        # the Broadcast itself fails only if the death was noticed before it began
        assert v["bcast"]["type"] in (None, "NCCLRemoteError"), f"rank {r.rank}: {v}"
        assert v["next"]["type"] == "NCCLRemoteError", f"rank {r.rank}: {v}"
        assert v["elapsed"] < deadline / 3, f"rank {r.rank} took {v['elapsed']:.1f} s to notice"


@pytest.mark.timeout(60)
def test_rank_that_never_arrives_times_out(run_ranks):
    deadline = 3
    results = run_ranks(3, "ranks_groups:missing_rank", timeout=45, params={"sleep": deadline + 2},
                        env={"NCCL_HOST_TIMEOUT": str(deadline)})
    for r in results[:-1]:
        v = r.value
        assert v["type"] == "NCCLTimeout", f"rank {r.rank}: {v}"
        assert "rank 2" in v["msg"], f"rank {r.rank}: the message does not name the missing rank: {v}"
        assert deadline - 0.5 <= v["elapsed"] < deadline + 5, f"rank {r.rank}: {v}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [2, 3])
def test_abort_from_another_thread_unblocks_a_stuck_rank(run_ranks, nranks):
    results = run_ranks(nranks, "ranks_groups:abort_from_thread", timeout=45, params={"hold": 1.5},
                        env={"NCCL_HOST_TIMEOUT": "30"})
    stuck = results[0].value
    assert stuck["type"] == "NCCLInvalidUsage" and "aborted" in stuck["msg"], stuck
    assert stuck["elapsed"] < 5, stuck
    for r in results[1:-1]:
        assert r.value["type"] == "NCCLRemoteError" and r.value["elapsed"] < 5, (r.rank, r.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_shrink_default_then_abort_mode_after_a_death(run_ranks, nranks):
    dead = {nranks - 2} if nranks >= 3 else set()
    results = run_ranks(nranks, "ranks_groups:shrink", timeout=45, expect_death=dead)
    harness.assert_clean([r for r in results if r.rank not in dead])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 3])
def test_nonblocking_init_and_collective(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_groups:nonblocking_init", timeout=45, init=False))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2])
def test_bad_arguments_raise_and_leave_the_comm_in_step(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_groups:bad_arguments", timeout=45))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_short_creation_forms_return_comm_objects(run_ranks, nranks):
    """comm_init_rank/comm_split in their short forms on the host backend: Comm objects, a split
    inside a group filled at its end, the 0.3.1 form into a Comm's handle_ptr."""
    harness.assert_clean(run_ranks(nranks, "ranks_handles:short_forms", timeout=45, init=False))
