"""The launcher itself: results come back per rank, failures and timeouts name the rank."""

import os
import subprocess
import sys
import time

import pytest

import harness


@pytest.mark.timeout(60)
def test_code_string_and_rank_identity(run_ranks):
    res = run_ranks(3, "result = [rank, size, b.comm_user_rank(comm), b.comm_count(comm)]")
    assert [r.value for r in res] == [[r, 3, r, 3] for r in range(3)]


@pytest.mark.timeout(60)
def test_failing_rank_is_named():
    code = ("import sys\nif rank == 1:\n    print('said on stderr', file=sys.stderr)\n"
            "    raise ValueError('boom on one')\nresult = rank")
    with pytest.raises(pytest.fail.Exception) as ei:
        harness.launch(2, code, timeout=30)
    msg = str(ei.value)
    assert "rank 1/2 raised ValueError" in msg and "boom on one" in msg
    assert "said on stderr" in msg
    assert "rank 0/2" not in msg


@pytest.mark.timeout(60)
def test_straggler_is_killed_and_named():
    code = "import time\nif rank == 0:\n    time.sleep(60)\nresult = rank"
    with pytest.raises(pytest.fail.Exception) as ei:
        harness.launch(2, code, timeout=2)
    msg = str(ei.value)
    assert "rank 0/2 timed out after 2 s" in msg
    assert "rank 1/2" not in msg


@pytest.mark.timeout(60)
def test_crashed_rank_is_named_and_peers_are_not_left_waiting():
    """Rank 1 dies by a signal before a collective; rank 0 fails (the backend notices the death,
    or the launcher kills it after its grace period) long before the library deadline."""
    code = ("import os, numpy as np\nif rank == 1:\n    os.abort()\n"
            "x = np.ones(4, np.float32)\n"
            "b.all_reduce(x.ctypes.data, x.ctypes.data, 4, b.DataType.Float32, b.RedOp.Sum, comm, 0)\n")
    t0 = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as ei:
        harness.launch(2, code, timeout=30, env={"NCCL_HOST_TIMEOUT": "20"})
    assert time.monotonic() - t0 < 15
    assert "rank 1/2 exited with code -6" in str(ei.value)


@pytest.mark.timeout(60)
def test_expected_death_is_not_a_failure(run_ranks):
    # No communicator: with one, rank 1 could die while rank 0 is still inside its init.
    res = run_ranks(2, "import os, signal\nif rank == 1:\n    os.kill(os.getpid(), signal.SIGKILL)\n"
                       "result = 'alive'", expect_death={1}, init=False)
    assert res[0].value == "alive" and res[1].returncode == -9



def test_shm_check_counts_only_names_this_test_could_have_left():
    """The autouse /dev/shm check: a name created meanwhile by another live process on the
    machine is not this test's leftover; names of this process, of its ranks (alive or not), or
    of a process that is gone are."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    uid = os.geteuid()
    before = {f"nccl-host-{uid}-{gone.pid}-older": gone.pid}
    new = {f"nccl-host-{uid}-{p}-harnesstest": p for p in (other.pid, rank.pid, gone.pid, os.getpid())}
    try:
        left = harness.leftover_segments(before, dict(before, **new), test_pids={rank.pid})
    finally:
        for p in (other, rank):
            p.kill()
            p.wait()
    assert left == sorted(n for n, pid in new.items() if pid != other.pid)
