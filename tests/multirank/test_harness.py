"""The launcher itself: results come back per rank, failures and timeouts name the rank."""

import pytest

import harness


@pytest.mark.timeout(60)
def test_code_string_and_rank_identity(run_ranks):
    res = run_ranks(3, "result = [rank, size, b.comm_user_rank(comm), b.comm_count(comm)]")
    assert [r.value for r in res] == [[r, 3, r, 3] for r in range(3)]


@pytest.mark.timeout(60)
def test_failing_rank_is_named():
    code = "if rank == 1:\n    raise ValueError('boom on one')\nresult = rank"
    with pytest.raises(pytest.fail.Exception) as ei:
        harness.launch(2, code, timeout=30)
    msg = str(ei.value)
    assert "rank 1/2 raised ValueError" in msg and "boom on one" in msg
    assert "rank 0/2" not in msg


@pytest.mark.timeout(60)
def test_straggler_is_killed_and_named():
    code = "import time\nif rank == 0:\n    time.sleep(60)\nresult = rank"
    with pytest.raises(pytest.fail.Exception) as ei:
        harness.launch(2, code, timeout=3)
    msg = str(ei.value)
    assert "rank 0/2 timed out after 3 s" in msg
    assert "rank 1/2" not in msg
