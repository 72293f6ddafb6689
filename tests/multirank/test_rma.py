"""Windows and one-sided operations on the host backend (src/host/window.c, src/host/rma.c;
docs/host-backend.md#windows-and-one-sided-operations) at 2-4 ranks, through nccl.core and the
bindings, against numpy (rank side: ranks_rma.py). They use no large message, so they run under
one transport (conftest.ONE_TRANSPORT)."""

import re

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

RANKS = [2, 3, 4]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", RANKS)
def test_puts_into_every_peer_then_one_wait(run_ranks, nranks):
    """Distinct offsets in every peer's window, one wait; many puts then one wait; peer and
    user pointers, stores through the mapped peers' windows."""
    harness.assert_clean(run_ranks(nranks, "ranks_rma:puts_then_wait", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", RANKS)
def test_signal_ping_pong(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_rma:ping_pong", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", RANKS)
def test_windows_registered_inside_a_group(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_rma:group_windows", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", RANKS)
def test_window_over_numpy_memory_and_vllm_pattern(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_rma:foreign_memory", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_bad_input(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_rma:bad_input", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_peer_killed_during_wait(run_ranks, nranks):
    """kill -9 of the last rank while rank 0 waits for its signal: ncclRemoteError naming it,
    well before the 30 s deadline the harness sets."""
    results = harness.assert_clean(run_ranks(nranks, "ranks_rma:wait_then_peer_dies", timeout=90, expect_death=(nranks - 1,)))
    assert results[0].extra["elapsed"] < 20, results[0].extra


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_abort_during_wait(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_rma:abort_during_wait", timeout=90))


@pytest.mark.timeout(120)
def test_wait_obeys_the_deadline(run_ranks):
    harness.assert_clean(run_ranks(2, "ranks_rma:wait_deadline", timeout=90, env={"NCCL_HOST_TIMEOUT": "1"}))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 4])
def test_signals_of_ranks_that_left_still_count(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_rma:senders_leave", timeout=90))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_peer_killed_during_registration(run_ranks, nranks):
    results = harness.assert_clean(run_ranks(nranks, "ranks_rma:register_then_peer_dies", timeout=90,
                               expect_death=(nranks - 1,)))
    # each survivor names the killed rank as the first cause, also when a survivor that failed
    # left first ("... which left the communicator (finalize/destroy) after rank 2 (pid P) died")
    for r in results[:-1]:
        assert set(re.findall(r"rank (\d+) \(pid \d+\)(?:, which)? died(?! after)", r.extra["error"])) == {str(nranks - 1)}, r.extra


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_nonblocking_communicator(run_ranks, nranks):
    harness.assert_clean(run_ranks(nranks, "ranks_rma:nonblocking", timeout=90, init=False))
