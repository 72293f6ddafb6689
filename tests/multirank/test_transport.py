"""The host backend's transports (src/host/transport.c): which one a communicator chose and why
(its NCCL_DEBUG=INFO "transport:" line), spinning only when the ranks do not outnumber their
CPUs, single-copy reads that stay inside the buffers (guard pages), and a peer killed in the
middle of a single-copy read.

CPU time is read with getrusage (user + system) of the waiting rank's process, not wall time.
"""

import os
import platform
import re

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)

DEBUG = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT"}


def transport_line(result):
    lines = [ln for ln in result.stderr.splitlines() if "transport:" in ln]
    assert lines, f"rank {result.rank} logged no transport line:\n{result.stderr[-2000:]}"
    return lines[0].split("transport: ", 1)[1]


def skip_unless_direct(results):
    """Single copy needs the kernel's consent (ptrace access between the ranks); say so instead
    of passing without testing it."""
    line = transport_line(results[0])
    if not line.startswith("single-copy"):
        pytest.skip(f"single-copy reads are not possible here: {line}")


@pytest.mark.timeout(60)
def test_choice_is_logged_and_agreed(run_ranks):
    on = run_ranks(3, "result = None", timeout=45, env=dict(DEBUG, NCCL_HOST_DIRECT="auto"))
    lines = {transport_line(r) for r in on}
    assert len(lines) == 1, f"ranks disagree: {lines}"
    line = lines.pop()
    assert line.startswith("single-copy reads (process_vm_readv) from 65536 bytes") or "single copy off:" in line, line
    off = run_ranks(3, "result = None", timeout=45, env=dict(DEBUG, NCCL_HOST_DIRECT="0"))
    for r in off:
        assert transport_line(r).startswith("shared segment only (single copy off: NCCL_HOST_DIRECT=0)"), r.stderr


@pytest.mark.timeout(60)
def test_one_rank_that_cannot_read_turns_single_copy_off_everywhere(run_ranks):
    """The probe's verdict is agreed: when one rank's process_vm_readv is refused (a seccomp filter
    here), all ranks use the shared segment, say why, and warn because it was asked for."""
    if platform.machine() != "x86_64":
        pytest.skip("the seccomp filter of this test is written for x86_64")
    res = run_ranks(3, "ranks_transport:one_rank_cannot_read", timeout=45, init=False,
                    env=dict(DEBUG, NCCL_HOST_DIRECT="1"))
    for r in res:
        line = transport_line(r)
        assert line.startswith("shared segment only (single copy off: "), line
        assert r.value["ok"], f"rank {r.rank}: wrong AllGather result"
        assert "NCCL_HOST_DIRECT=1 but single-copy reads are not possible" in r.stderr, r.stderr[-2000:]
    assert "process_vm_readv from rank 0 (pid" in transport_line(res[1]), transport_line(res[1])
    assert "Operation not permitted" in transport_line(res[1]), transport_line(res[1])


@pytest.mark.timeout(60)
def test_no_spin_when_ranks_outnumber_cpus(run_ranks):
    """Both ranks pinned to one CPU: with a 1 s spin allowed (NCCL_HOST_SPIN_US), a rank that
    waits 2 s for its peer must still sleep, not spin."""
    res = run_ranks(2, "ranks_transport:idle_wait", timeout=45, init=False, params={"late": 2.0, "one_cpu": True},
                    env=dict(DEBUG, NCCL_HOST_SPIN_US="1000000"))
    for r in res:
        assert re.search(r"no spin \(2 ranks > 1 CPUs\)", transport_line(r)), transport_line(r)
    wait = res[0].value
    assert wait["wall"] > 1.5, wait
    assert wait["cpu"] < 0.25, f"the waiting rank used {wait['cpu']:.3f} s of CPU in {wait['wall']:.2f} s"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("yield_us", [None, "100000"])
def test_idle_rank_beyond_the_yield_window_sleeps(run_ranks, yield_us):
    """4 ranks pinned to one CPU: a waiting rank yields the CPU for a bounded window (the default,
    or 0.1 s under NCCL_HOST_YIELD_US), then sleeps: waiting 1.5 s for the last rank uses well
    under a third of that time in CPU."""
    env = dict(DEBUG) if yield_us is None else dict(DEBUG, NCCL_HOST_YIELD_US=yield_us)
    res = run_ranks(4, "ranks_transport:idle_wait", timeout=75, init=False, params={"late": 1.5, "one_cpu": True},
                    env=env)
    assert re.search(r"no spin \(4 ranks > 1 CPUs\)", transport_line(res[0])), transport_line(res[0])
    wait = res[0].value
    assert wait["wall"] > 1.0, wait
    assert wait["cpu"] < 0.3 * wait["wall"], f"the waiting rank used {wait['cpu']:.3f} s of CPU in {wait['wall']:.2f} s"


@pytest.mark.timeout(90)
def test_small_operations_yield_window_shrinks_when_peers_are_late(run_ranks):
    """An 8-byte AllReduce yields for up to NCCL_HOST_YIELD_SMALL_US (here 0.3 s) before it
    sleeps, but the window halves after each wait longer than twice that: 8 waits of 0.7 s for
    the last rank, 4 ranks on one CPU. At a fixed 0.3 s window the waiting rank would take a third
    of the CPU for 0.3 s of each wait (14% of the time); adapted, about 4%."""
    res = run_ranks(4, "ranks_transport:idle_wait", timeout=75, init=False,
                    params={"late": 0.7, "rounds": 8, "one_cpu": True},
                    env=dict(DEBUG, NCCL_HOST_YIELD_SMALL_US="300000"))
    wait = res[0].value
    assert wait["wall"] > 5.0, wait
    assert wait["cpu"] < 0.08 * wait["wall"], f"the waiting rank used {wait['cpu']:.3f} s of CPU in {wait['wall']:.2f} s"


@pytest.mark.timeout(60)
def test_idle_rank_beyond_the_spin_window_sleeps(run_ranks):
    """Ranks <= CPUs: spinning is allowed, but bounded by its window (default 50 us); a rank
    that waits 2 s uses next to no CPU."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two usable CPUs")
    res = run_ranks(2, "ranks_transport:idle_wait", timeout=45, init=False, params={"late": 2.0}, env=DEBUG)
    assert "spin up to 50 us" in transport_line(res[0]), transport_line(res[0])
    wait = res[0].value
    assert wait["wall"] > 1.5, wait
    assert wait["cpu"] < 0.25, f"the waiting rank used {wait['cpu']:.3f} s of CPU in {wait['wall']:.2f} s"


@pytest.mark.timeout(60)
def test_spinning_shows_in_cpu_time(run_ranks):
    """The control for the two tests above: with a 1 s window and a CPU for each rank, the same
    wait does burn CPU, so CPU time does detect a spin."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two usable CPUs")
    res = run_ranks(2, "ranks_transport:idle_wait", timeout=45, init=False, params={"late": 2.0, "own_cpu": True},
                    env=dict(DEBUG, NCCL_HOST_SPIN_US="1000000"))
    assert "spin up to 1000000 us" in transport_line(res[0]), transport_line(res[0])
    assert res[0].value["cpu"] > 0.05, res[0].value


@pytest.mark.timeout(120)
@pytest.mark.parametrize("direct", ["1", "0"])
@pytest.mark.parametrize("nranks", [2, 3])
def test_guard_pages(run_ranks, nranks, direct):
    """Every collective and a p2p ring on buffers flush against PROT_NONE pages (either end), in
    and out of place: a byte read or written outside a buffer faults."""
    res = run_ranks(nranks, "ranks_transport:guard_pages", timeout=90, params={"count": 3001},
                    env=dict(DEBUG, NCCL_HOST_DIRECT=direct))
    if direct == "1":
        skip_unless_direct(res)
    harness.assert_clean(res)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("what", ["broadcast", "sendrecv"])
@pytest.mark.parametrize("victim", ["sender", "reader"])
def test_peer_killed_during_single_copy_read(run_ranks, what, victim):
    """Rank 0 kills the sender (the last rank), or itself, once its single-copy read of a 128 MiB
    message is under way: every rank left waiting on the dead one gets ncclRemoteError, long
    before the 30 s deadline. A Broadcast to two readers; a send/recv pair (a second, finished
    receiver would leave and so fail the sender before the kill). A reader whose read the kernel
    finished before the killed sender's process was gone holds the sender's whole message and
    succeeds (docs/host-backend.md#single-copy-direct-transfers): on a loaded machine rank 0's
    watcher may see the read under way only near its end."""
    nranks = 3 if what == "broadcast" else 2
    dead = nranks - 1 if victim == "sender" else 0
    res = run_ranks(nranks, "ranks_transport:kill_during_read", timeout=75, expect_death={dead},
                    params={"what": what, "victim": victim, "count": 32 << 20},
                    env=dict(DEBUG, NCCL_HOST_DIRECT="1", NCCL_HOST_TIMEOUT="30"))
    live = [r for r in res if r.rank != dead]
    skip_unless_direct(live)
    assert res[dead].returncode == -9, (res[dead].returncode, res[dead].stderr[-2000:])
    if victim == "sender":
        assert res[0].value["mid_read"], "the read finished before rank 0 saw it under way"
    # every survivor waits on the dead rank: the readers of a dead sender; the sender of a dead
    # reader, and in a Broadcast the other reader too (its last phase waits for every rank's read)
    for r in live:
        v = r.value
        if victim == "sender" and v["type"] is None:
            assert v["data_ok"], f"rank {r.rank} returned without the whole message: {v}"
            continue
        assert v["type"] == "NCCLRemoteError", f"rank {r.rank}: {v}"
        assert v["elapsed"] < 10, f"rank {r.rank} took {v['elapsed']:.1f} s to notice"
