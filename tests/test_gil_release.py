"""The GIL is released around library calls (docs/developing.md#how-we-test): a call blocked inside the stub
on a worker thread must leave the main thread running Python. The stub's blocked call has its own
deadline (then it returns ncclTimeout), so a binding that kept the GIL fails here instead of
hanging. A control run through ctypes.PyDLL, which keeps the GIL on purpose, shows that the check
does tell the two apart."""

import pytest

PROVE = """
import threading, time

def run(call, outcome):
    r = catch(call)
    if r[0] == "ok" and not isinstance(r[1], (int, type(None))):
        r = ("ok", type(r[1]).__name__)
    outcome["r"] = r

def prove(sym, call, deadline=2.0, wait=5.0):
    stub.set_block_deadline(deadline)
    stub.block(sym)
    outcome = {}
    worker = threading.Thread(target=run, args=(call, outcome))
    worker.start()
    blocked = stub.wait_blocked(sym, wait)
    # Python work on this thread while the worker sits inside the library.
    spins, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < 0.05:
        spins += 1
    still_blocked = stub.is_blocked(sym) and worker.is_alive()
    stub.unblock(sym)
    worker.join(10)
    return dict(blocked=blocked, spins=spins, still_blocked=still_blocked, alive=worker.is_alive(),
                timed_out=stub.timed_out(sym), outcome=outcome.get("r"),
                calls=[name for name, _ in stub.calls()])
"""

CALLS = {
    "all_reduce": ("nccl", "ncclAllReduce", "lambda: b.all_reduce(1, 2, 3, 7, 0, 4, 5)", ("ok", None)),
    "send": ("nccl", "ncclSend", "lambda: b.send(1, 2, 7, 1, 4, 5)", ("ok", None)),
    "group_end": ("nccl", "ncclGroupEnd", "b.group_end", ("ok", None)),
    "comm_init_rank": ("nccl", "ncclCommInitRank",
                       "lambda: b.comm_init_rank(box.address, 2, b.get_unique_id(), 0)", ("ok", 0)),
    "comm_init_rank 0.2.0": ("nccl", "ncclCommInitRank", "lambda: b.comm_init_rank(2, bytes(128), 0)", "handle"),
    "comm_init_rank_scalable": ("nccl", "ncclCommInitRankScalable",
                                "lambda: b.comm_init_rank_scalable(box.address, 2, 0, 2, bytes(256), 0)", ("ok", 0)),
    "comm_shrink": ("nccl", "ncclCommShrink", "lambda: b.comm_shrink(1, [0, 1], 2, box.address, 0, 0)", ("ok", 0)),
    "get_unique_id": ("nccl", "ncclGetUniqueId", "b.get_unique_id", ("ok", "UniqueId")),
    "wait_signal": ("nccl", "ncclWaitSignal", "lambda: b.wait_signal(1, bytes(16), 4, 5)", ("ok", None)),
    "all_to_all_v": ("rccl", "ncclAlltoAllv", "lambda: rx.all_to_all_v(1, [1] * 4, [0] * 4, 2, [1] * 4, [0] * 4, 7, 4, 5)",
                     ("ok", None)),
}


@pytest.mark.parametrize("label", list(CALLS))
def test_library_call_releases_the_gil(stub_python, label):
    variant, sym, call, expected = CALLS[label]
    r = stub_python(variant).run(PROVE + f"""
box = b.PointerBox()
result = prove({sym!r}, {call})
""")
    assert r["blocked"], "the call never reached the library"
    assert r["still_blocked"] and r["spins"] > 0, "the main thread could not run while the call was blocked"
    assert not r["alive"] and not r["timed_out"]
    if expected == "handle":
        assert r["outcome"][0] == "ok" and r["outcome"][1] != 0
    else:
        assert r["outcome"] == expected
    assert sym in r["calls"]


def test_the_check_detects_a_call_that_keeps_the_gil(stub_python):
    """The same proof around a ctypes.PyDLL call (which holds the GIL): the main thread only runs
    again once the stub's deadline has passed."""
    r = stub_python("nccl").run(PROVE + """
import ctypes, os, sys
if getattr(sys, "_is_gil_enabled", lambda: True)():
    held = ctypes.PyDLL(os.environ["NCCL_LIBRARY"]).ncclGroupEnd
    result = prove("ncclGroupEnd", held, deadline=1.0, wait=0.2)
else:
    result = "no GIL"
""", timeout=30)
    if r == "no GIL":
        pytest.skip("the GIL is off in this free-threaded interpreter: there is none for the control to hold")
    # Depending on when the main thread lost the GIL it may not even have seen the call blocked;
    # either way it never ran while the call was blocked, and the call hit its deadline.
    assert not r["still_blocked"], r
    assert r["timed_out"] and r["outcome"] == ("ok", 8)  # the stub gave up: ncclTimeout


def test_first_load_runs_without_the_gil(fresh_python):
    """The load itself (here: the loader's ncclGetVersion probe, blocked) and a second thread
    waiting for the loader's lock both leave the main thread running; the library is loaded once."""
    r = fresh_python("""
        import threading, time
        stub.set_block_deadline(3.0)
        stub.block("ncclGetVersion")
        out = []
        first = threading.Thread(target=lambda: out.append(("first", catch(b.get_library_flavour))))
        first.start()
        blocked = stub.wait_blocked("ncclGetVersion", 5.0)
        second = threading.Thread(target=lambda: out.append(("second", catch(b.all_reduce, 1, 2, 3, 7, 0, 4, 5))))
        second.start()
        spins, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < 0.1:
            spins += 1
        still = stub.is_blocked("ncclGetVersion") and first.is_alive() and second.is_alive()
        stub.unblock("ncclGetVersion")
        first.join(10)
        second.join(10)
        result = (blocked, still, spins, stub.timed_out("ncclGetVersion"), sorted(out), stub.calls(),
                  b.get_load_attempts())
    """, variant="nccl", open_stub=True)
    blocked, still, spins, timed_out, out, calls, attempts = r
    assert blocked and still and spins > 0 and not timed_out
    assert out == [("first", ("ok", "nccl")), ("second", ("ok", None))]
    assert [name for name, _ in calls] == ["ncclGetVersion", "ncclAllReduce"]  # one load
    assert len(attempts) == 1 and attempts[0][1] is None
