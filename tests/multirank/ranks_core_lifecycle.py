"""Rank-side checks of nccl.core.Communicator's lifecycle on the host backend: construction,
cached queries, split/shrink, nonblocking creation, teardown and the context manager.

Each function returns {"failures": [...]} (plus whatever the test compares across ranks)."""

import gc
import threading
import time
import warnings

import numpy as np

import nccl.core as nc
from nccl.bindings.nccl import NCCLError
from nccl.core import Communicator, NCCLConfig, NcclInvalid, UniqueId
from rank_main import Fails


def _init(ctx, config=None):
    return Communicator.init(nranks=ctx.size, rank=ctx.rank, unique_id=UniqueId.from_bytes(ctx.uid), config=config)


def init_and_queries(ctx):
    """init with keywords, cached queries, properties, repr, and errors on a second initialize."""
    f = Fails(ctx)
    comm = _init(ctx)
    f.check(comm.is_valid and comm.ptr != 0, "valid after init")
    f.check((comm.nranks, comm.rank) == (ctx.size, ctx.rank), f"nranks/rank {comm.nranks}/{comm.rank}")
    f.check(repr(comm) == f"<Communicator: rank={ctx.rank}/{ctx.size}, device=host, ptr={hex(comm.ptr)}>",
            f"repr {comm!r}")
    f.check(comm.device.device_id == comm.cuda_dev, f"device {comm.device!r} vs cuda_dev {comm.cuda_dev}")
    f.check(isinstance(comm.device_api_support, bool), "device_api_support is a bool")
    f.check(int(comm.get_async_error()) == 0 and type(comm.get_async_error()).__name__ == "Result",
            f"async error {comm.get_async_error()!r}")
    f.check(isinstance(comm.get_last_error(), str), "last error text")
    f.raises(NcclInvalid, "Communicator is already initialized", comm.initialize, ctx.size, ctx.rank,
             UniqueId.from_bytes(ctx.uid))
    comm.destroy()
    f.check(not comm.is_valid and comm.ptr == 0, "null after destroy")
    f.check(repr(comm) == "<Communicator: null (ptr=0)>", f"repr after destroy {comm!r}")
    comm.destroy()  # a no-op now
    comm.abort()
    comm.finalize()
    # upstream's text, then what happened and what to do (abort() after destroy() changed nothing)
    destroyed = (": it was destroyed (destroy(), or the end of its with block); create a new communicator "
                 "to go on")
    for name in ("nranks", "rank", "device", "cuda_dev", "gin_type"):
        op = {"cuda_dev": "get cuda_dev", "gin_type": "get gin_type"}.get(name, f"get {name}")
        f.raises(NcclInvalid, f"Cannot {op}: Communicator not initialized{destroyed}", getattr, comm, name)
    f.raises(NcclInvalid, f"Cannot split: Communicator not initialized{destroyed}", comm.split, 0)
    f.raises(NcclInvalid, f"Cannot get async error: Communicator not initialized{destroyed}", comm.get_async_error)
    return f.result()


def bad_ids(ctx):
    """unique_id checks happen before any library call (single rank)."""
    f = Fails(ctx)
    c = Communicator()
    f.raises(NcclInvalid, "unique_id must be a UniqueId or a sequence of UniqueIds", c.initialize, 1, 0, b"x" * 128)
    f.raises(NcclInvalid, "unique_id must be a UniqueId or a sequence of UniqueIds", c.initialize, 1, 0, [1, 2])
    f.raises(NcclInvalid, "unique_id sequence must not be empty", c.initialize, 1, 0, [])
    f.raises(TypeError, None, c.initialize, 1, 0, UniqueId.from_bytes(ctx.uid), config=42)
    f.raises(TypeError, None, c.initialize, 1)
    f.check(not c.is_valid, "still null")
    return f.result()


def several_ids(ctx):
    """init with a list of ids (ncclCommInitRankScalable); all ranks pass the same list."""
    f = Fails(ctx)
    uid = UniqueId.from_bytes(ctx.uid)
    comm = Communicator.init(ctx.size, ctx.rank, [uid])
    f.check(comm.nranks == ctx.size, "scalable init")
    comm.destroy()
    return f.result()


def split_and_shrink(ctx):
    """split by parity with reversed keys; NOCOLOR gives a null communicator; shrink drops the
    last rank (called by the survivors only), which lives on: every rank then splits the parent
    again and allreduces on the child and on the parent."""
    f = Fails(ctx)
    n, r = ctx.size, ctx.rank
    with _init(ctx) as comm:
        child = comm.split(r % 2, key=-r)
        members = sorted((q for q in range(n) if q % 2 == r % 2), reverse=True)
        f.check((child.nranks, child.rank) == (len(members), members.index(r)),
                f"split gave {child.nranks}/{child.rank}, want {len(members)}/{members.index(r)}")
        f.check(type(child) is Communicator, "child class")
        child.destroy()
        none_child = comm.split(None if r == 0 else 1)
        f.check(none_child.is_valid == (r != 0), f"NOCOLOR child valid={none_child.is_valid}")
        if r == 0:
            f.raises(NcclInvalid, "Cannot get nranks: Communicator not initialized: this rank passed color=None "
                     "(NCCL_SPLIT_NOCOLOR) to split(), so it is not a member of that communicator; only the ranks "
                     "that passed a color use it", getattr, none_child, "nranks")
        else:
            f.check(none_child.nranks == n - 1, "colour 1 child size")
        none_child.destroy()
        if n > 1 and r != n - 1:
            small = comm.shrink([n - 1])
            f.check((small.nranks, small.rank) == (n - 1, r), f"shrink gave {small.nranks}/{small.rank}")
            small.destroy()
        again = comm.split(0, key=r)
        x = np.full(3, r + 1, np.float32)
        again.allreduce(x, x, nc.SUM)
        comm.allreduce(x, x, nc.SUM)
        want = n * (n * (n + 1) / 2)
        f.check(np.array_equal(x, np.full(3, want, np.float32)), f"after the shrink: {x}, want {want}")
        again.destroy()
    f.check(not comm.is_valid, "with-block destroyed the parent")
    return f.result()


def nonblocking(ctx):
    """NCCLConfig(blocking=False): creation returns at once; poll get_async_error to Success."""
    f = Fails(ctx)
    comm = _init(ctx, NCCLConfig(blocking=False))
    deadline = time.monotonic() + 20
    states = []
    while True:
        state = comm.get_async_error()
        states.append(int(state))
        if int(state) != 7 or time.monotonic() > deadline:
            break
        time.sleep(0.001)
    f.check(states[-1] == 0, f"final state {states[-1]}")
    f.check(comm.nranks == ctx.size, "usable after polling")
    child = comm.split(0, ctx.rank)
    while int(comm.get_async_error()) == 7 or int(child.get_async_error()) == 7:
        time.sleep(0.001)
    f.check(child.nranks == ctx.size, "nonblocking split child")
    child.destroy()
    comm.destroy()
    return f.result()


def context_manager_aborts_on_error(ctx):
    """An exception leaving the with-block aborts (no collective destroy) and propagates."""
    f = Fails(ctx)
    comm = _init(ctx)
    try:
        with comm:
            raise KeyError("boom")
    except KeyError:
        pass
    else:
        f.check(False, "exception swallowed")
    f.check(not comm.is_valid, "aborted on exit")
    return f.result()


def gc_warns_without_collective(ctx):
    """A live communicator dropped without destroy warns (ResourceWarning) and is leaked: the
    collector never runs a collective. The other ranks are not involved at all."""
    f = Fails(ctx)
    comm = _init(ctx)
    ptr = comm.ptr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del comm
        gc.collect()
    texts = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    f.check(len(texts) == 1 and "was not destroyed" in texts[0], f"warnings {texts}")
    # The handle is still alive (leaked): wrapping it again works and destroys it properly.
    again = Communicator(ptr)
    f.check(again.nranks == ctx.size, "leaked handle still usable")
    again.destroy()
    return f.result()


def abort_from_another_thread(ctx):
    """Rank 0 blocks in an allreduce the others never join; another thread aborts it."""
    f = Fails(ctx)
    comm = _init(ctx)
    if ctx.rank != 0:
        time.sleep(3.0)  # stay alive (not joining) until rank 0 has aborted
        comm.abort()
        return f.result()
    x = np.ones(16, np.float32)
    timer = threading.Timer(0.5, comm.abort)
    timer.start()
    t0 = time.monotonic()
    try:
        comm.allreduce(x, x, nc.SUM)
    except NCCLError:
        pass
    except NcclInvalid:
        pass  # aborted before the call read the handle
    else:
        f.check(False, "allreduce returned although it was aborted")
    timer.join()
    f.check(time.monotonic() - t0 < 10, "abort unblocked the stuck call")
    f.check(not comm.is_valid, "null after abort")
    return f.result()


def init_all(ctx):
    """Communicator.init_all in one process: n communicators, rank i on device i."""
    f = Fails(ctx)
    n = ctx.params["ndev"]
    comms = Communicator.init_all(list(range(n)))
    f.check([(c.rank, c.nranks) for c in comms] == [(i, n) for i in range(n)], "ranks of init_all")
    for c in comms:
        c.destroy()
    f.check(Communicator.init_all([]) == [], "empty list")
    f.raises(TypeError, "devices must be an integer, sequence of integers, or None, got str",
             Communicator.init_all, "0")
    return f.result()
