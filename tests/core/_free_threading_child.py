"""Run inside a fresh child interpreter (never imported by pytest) by test_free_threading.py:

    python _free_threading_child.py SCENARIO NTHREADS ITERATIONS

Each scenario starts its threads at one barrier, so they race whatever the extension does on
first use (the library load, the lazily imported Python objects, the per-dtype caches) as well
as the steady state, and prints one JSON object: {"failures": [...], "calls": n, "gil": ...}.
Expected values come from numpy and from the arrays themselves, never from the extension.
With the GIL on, a tiny switch interval makes the threads interleave as often as it can.
"""

import json
import re
import sys
import threading

import numpy as np

MAX_FAILURES = 40
JOIN_TIMEOUT = 120.0

try:
    import ml_dtypes
except ImportError:  # bfloat16/fp8 are then left out
    ml_dtypes = None

# numpy dtype -> NcclDataType member name
DTYPES = {
    np.dtype(np.int8): "INT8", np.dtype(np.uint8): "UINT8", np.dtype(np.int32): "INT32",
    np.dtype(np.uint32): "UINT32", np.dtype(np.int64): "INT64", np.dtype(np.uint64): "UINT64",
    np.dtype(np.float16): "FLOAT16", np.dtype(np.float32): "FLOAT32", np.dtype(np.float64): "FLOAT64",
    np.dtype(np.bool_): "UINT8",
}
if ml_dtypes is not None:
    DTYPES[np.dtype(ml_dtypes.bfloat16)] = "BFLOAT16"
    DTYPES[np.dtype(ml_dtypes.float8_e4m3fn)] = "FLOAT8E4M3"
    DTYPES[np.dtype(ml_dtypes.float8_e5m2)] = "FLOAT8E5M2"
# resolving these must fail with NcclInvalid, the same message in every thread
UNSUPPORTED = [np.dtype(np.complex64), np.dtype(np.int16), np.dtype(">f4")]
REDUCIBLE = [dt for dt in DTYPES if dt != np.bool_]


class Failures:
    def __init__(self):
        self.lock = threading.Lock()
        self.items = []
        self.calls = 0

    def add(self, what):
        with self.lock:
            if len(self.items) < MAX_FAILURES:
                self.items.append(what)

    def count(self, n):
        with self.lock:
            self.calls += n


def values(dt, n, seed):
    """n small values exact in every dtype (fp8 included)."""
    v = (np.arange(n, dtype=np.int64) * 7 + seed * 3) % 8
    if dt.kind in "ifV":  # signed (ml_dtypes' types are kind V)
        v = v - 4
    return v.astype(np.float64).astype(dt)


def same(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def run_threads(nthreads, target, failures):
    barrier = threading.Barrier(nthreads)

    def body(t):
        try:
            barrier.wait(timeout=JOIN_TIMEOUT)
            target(t)
        except BaseException as e:  # noqa: BLE001 - every outcome is data here
            failures.add(f"thread {t}: {type(e).__name__}: {e}")

    # daemon: a thread stuck in the library is reported below and does not keep the process alive
    threads = [threading.Thread(target=body, args=(t,), daemon=True) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(JOIN_TIMEOUT)
        if th.is_alive():
            failures.add(f"{th.name} did not finish in {JOIN_TIMEOUT} s")


def scenario_comm(nthreads, iterations, failures, contend):
    """allreduce and broadcast from every thread on one 1-rank host communicator.

    NCCL's contract is one issuing thread at a time per communicator. Taking turns (contend
    False: a lock around each call, everything else, attribute reads included, concurrent) every
    call must succeed. Contending (no lock), a call that meets another inside the library must fail
    with the host backend's "in use by another thread" NCCLInvalidUsage, and every other call must
    give the right result: misuse is an exception, never a crash or wrong data."""
    import contextlib

    import nccl.core as nccl
    from nccl._errors import NCCLInvalidUsage

    comm = nccl.Communicator.init(1, 0, nccl.get_unique_id())
    refs_before = sys.getrefcount(comm)
    turn = contextlib.nullcontext() if contend else threading.Lock()
    refused = [0]

    def call(fn, *args):
        """True when the call ran; False when it was refused as concurrent use (contend only)."""
        try:
            with turn:
                fn(*args)
            return True
        except NCCLInvalidUsage as e:
            # The detail line is the library's last error, which is process-wide (as in NCCL): it
            # may be the refusal of the other thread's call, allreduce or broadcast.
            if not contend or not re.search(r"\n  library's last error: nccl(AllReduce|Broadcast): communicator is "
                                            r"in use by another thread$", str(e)):
                raise
            with failures.lock:
                refused[0] += 1
            return False

    def work(t):
        for i in range(iterations):
            dt = REDUCIBLE[(t + i) % len(REDUCIBLE)]
            n = 1 + (t * 31 + i * 17) % 300
            x = values(dt, n, t + i)
            keep = x.copy()
            y = np.full(n, 1, dtype=dt)
            refs_x = sys.getrefcount(x)
            if call(comm.allreduce, x, y, nccl.SUM) and not same(y, keep):
                failures.add(f"thread {t} allreduce {dt} n={n}: {y[:6]!r} != {keep[:6]!r}")  # one rank: sum = input
            z = np.zeros(n, dtype=dt)
            if call(comm.broadcast, x, z, 0) and not same(z, keep):
                failures.add(f"thread {t} broadcast {dt} n={n}: {z[:6]!r} != {keep[:6]!r}")
            w = keep.copy()
            call(comm.allreduce, w, w, nccl.MAX)  # in place
            if not same(w, keep) or not same(x, keep):
                failures.add(f"thread {t} in-place allreduce {dt} n={n} changed the data")
            if sys.getrefcount(x) != refs_x:
                failures.add(f"thread {t}: reference count of the send buffer {refs_x} -> {sys.getrefcount(x)}")
            if (comm.rank, comm.nranks, comm.is_valid) != (0, 1, True):
                failures.add(f"thread {t}: comm reports {(comm.rank, comm.nranks, comm.is_valid)}")
            failures.count(3)

    run_threads(nthreads, work, failures)
    if sys.getrefcount(comm) != refs_before:
        failures.add(f"reference count of the communicator {refs_before} -> {sys.getrefcount(comm)}")
    if (failures.calls - refused[0]) * 10 < failures.calls:
        failures.add(f"{refused[0]} of {failures.calls} calls refused: too few ran to check their results")
    # After the race, one thread: the communicator still works.
    x = values(np.dtype(np.float32), 64, 1)
    y = np.zeros_like(x)
    comm.allreduce(x, y, nccl.SUM)
    if not same(y, x):
        failures.add("allreduce after the threads: wrong result")
    comm.destroy()
    if comm.is_valid:
        failures.add("the communicator is still valid after destroy")
    return {"refused": refused[0]}


def scenario_buffers(nthreads, iterations, failures):
    """NcclBuffer over numpy arrays of every dtype from every thread, first sight of each dtype
    included (the per-dtype caches start empty in this process)."""
    from nccl._errors import NcclInvalid
    from nccl._ext import NcclBuffer

    kinds = list(DTYPES) + UNSUPPORTED
    messages = {}  # dtype -> {message seen}
    lock = threading.Lock()

    step = threading.Barrier(nthreads)

    def work(t):
        import nccl.core as nccl

        # First sight: every thread resolves the same new dtype at once, one dtype per round, so
        # the cache fills are contended; then the threads run free over all of them.
        order = kinds + [kinds[(t * 5 + i) % len(kinds)] for i in range(iterations)]
        for i, dt in enumerate(order):
            if i < len(kinds):
                step.wait(timeout=JOIN_TIMEOUT)
            a = np.zeros(1 + (i + t) % 33, dtype=dt)
            try:
                b = NcclBuffer(a)
            except NcclInvalid as e:
                if dt in DTYPES:
                    failures.add(f"thread {t}: {dt} refused: {e}")
                with lock:
                    messages.setdefault(str(dt), set()).add(str(e))
                failures.count(1)
                continue
            if dt not in DTYPES:
                failures.add(f"thread {t}: {dt} resolved; it has no NCCL equivalent")
                continue
            want = (a.ctypes.data, a.size, a.nbytes, nccl.NcclDataType[DTYPES[dt]], -1)
            got = (b.ptr, b.count, b.nbytes, b.dtype, b.device_id)
            if got != want:
                failures.add(f"thread {t} {dt}: (ptr, count, nbytes, dtype, device) {got} != {want}")
            failures.count(1)

    run_threads(nthreads, work, failures)
    # After the race, one thread: every cached mapping is still right (a fill torn between two
    # threads would leave a dtype mapped to another's NCCL type for good) ...
    import nccl.core as nccl

    for dt, name in DTYPES.items():
        got = NcclBuffer(np.zeros(3, dtype=dt)).dtype
        if got != nccl.NcclDataType[name]:
            failures.add(f"after the race {dt} resolves to {got!r}, not {name}")
    # ... and the messages of a single thread, now that every cache is warm, are the reference.
    for dt in UNSUPPORTED:
        try:
            NcclBuffer(np.zeros(2, dtype=dt))
        except NcclInvalid as e:
            seen = messages.get(str(dt), set())
            if seen - {str(e)}:
                failures.add(f"{dt}: messages {sorted(seen)} differ from {str(e)!r}")
        else:
            failures.add(f"{dt} resolved after the race")
    return {"kinds": len(kinds)}


def scenario_first_use(nthreads, iterations, failures):
    """The first calls of a fresh process, from every thread at once: the library load, the lazy
    imports behind nccl.core, the exception classes. Every thread must see the same answers."""
    import nccl.bindings.nccl as b
    import nccl.core as nccl
    from nccl._ext import NcclBuffer

    answers = []
    lock = threading.Lock()

    def work(t):
        mine = []
        step = t % 4
        for i in range(max(1, iterations)):
            which = (step + i) % 4
            if which == 0:
                mine.append(("version", b.get_version()))
            elif which == 1:
                mine.append(("dtype", int(NcclBuffer(np.zeros(3, np.float32)).dtype)))
            elif which == 2:
                mine.append(("lib", str(nccl.get_lib_path())))
            else:
                try:
                    b.comm_count(0)  # a NULL communicator: the library's error, as NCCLError
                    mine.append(("error", None))
                except Exception as e:  # noqa: BLE001 - the class and message are the answer
                    mine.append(("error", (type(e).__name__, str(e))))
            failures.count(1)
        with lock:
            answers.extend(mine)

    run_threads(nthreads, work, failures)
    by_kind = {}
    for kind, value in answers:
        by_kind.setdefault(kind, set()).add(json.dumps(value))
    for kind, seen in sorted(by_kind.items()):
        if len(seen) != 1:
            failures.add(f"{kind}: threads saw different answers {sorted(seen)}")
    if set(by_kind) != {"version", "dtype", "lib", "error"}:
        failures.add(f"not every first call ran: {sorted(by_kind)}")
    if int(nccl.NcclDataType.FLOAT32) not in [json.loads(v) for v in by_kind.get("dtype", ())]:
        failures.add(f"float32 resolved to {by_kind.get('dtype')}")
    if by_kind.get("error") and json.loads(next(iter(by_kind["error"]))) is None:
        failures.add("comm_count(0) did not raise")


SCENARIOS = {
    "comm_turns": lambda n, i, f: scenario_comm(n, i, f, contend=False),
    "comm_contend": lambda n, i, f: scenario_comm(n, i, f, contend=True),
    "buffers": scenario_buffers,
    "first_use": scenario_first_use,
}


def main():
    name, nthreads, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    gil = getattr(sys, "_is_gil_enabled", lambda: True)
    if gil():
        sys.setswitchinterval(1e-6)
    failures = Failures()
    extra = SCENARIOS[name](nthreads, iterations, failures) or {}
    print(json.dumps({"failures": failures.items, "calls": failures.calls, "gil": gil(), **extra}))


if __name__ == "__main__":
    main()
