"""Rank-side checks of growing a communicator (ncclCommGetUniqueId, ncclCommGrow) through
nccl.core on the host backend, against numpy.

The launcher starts every process of the grown communicator. Ranks below params["old"] first
make the old communicator with the launcher's id; the coordinator among them (params
["coordinator"]) makes the grow id with get_unique_id() and hands it to the new ranks through a
file in params["dir"]; the existing ranks call comm.grow(n[, uid]), the new ones
Communicator().grow(n, uid, rank=r). Each function returns {"failures": [...], ...}."""

import os
import threading
import time
from pathlib import Path

import numpy as np

import nccl.core as nc
from nccl.bindings.nccl import NCCLError
from nccl.core import Communicator, NcclInvalid, UniqueId
from nccl._errors import NCCLInvalidArgument, NCCLInvalidUsage, NCCLRemoteError, NCCLTimeout
from rank_main import Fails


def _old_comm(ctx, old):
    return Communicator.init(nranks=old, rank=ctx.rank, unique_id=UniqueId.from_bytes(ctx.uid))


def _publish(ctx, uid):
    path = Path(ctx.params["dir"]) / "grow.uid"
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(bytes(uid))
    os.replace(tmp, path)


def _receive(ctx, timeout=30):
    path = Path(ctx.params["dir"]) / "grow.uid"
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("no grow id from the coordinator")
        time.sleep(0.01)
    return UniqueId.from_bytes(path.read_bytes())


def _check_collectives(f, comm, n, r):
    """allreduce, allgather and broadcast (roots 0 and n-1) on the grown communicator."""
    x = (np.arange(11, dtype=np.float32) + 1) * (r + 1)
    y = np.zeros(11, np.float32)
    comm.allreduce(x, y, nc.SUM)
    want = (np.arange(11, dtype=np.float32) + 1) * sum(q + 1 for q in range(n))
    f.check(np.array_equal(y, want), f"allreduce gave {y[:4]}, want {want[:4]}")
    xi = np.arange(5, dtype=np.int64) + 100 * r
    yi = np.zeros(5, np.int64)
    comm.allreduce(xi, yi, nc.MAX)
    f.check(np.array_equal(yi, np.arange(5, dtype=np.int64) + 100 * (n - 1)), f"allreduce MAX gave {yi}")
    g = np.zeros(3 * n, np.int32)
    comm.allgather(np.full(3, r, np.int32), g)
    f.check(np.array_equal(g, np.repeat(np.arange(n, dtype=np.int32), 3)), f"allgather gave {g}")
    for root in (0, n - 1):
        b = np.arange(7, dtype=np.float64) * (root + 2) if r == root else np.zeros(7)
        comm.broadcast(b, b, root)
        f.check(np.array_equal(b, np.arange(7, dtype=np.float64) * (root + 2)), f"broadcast root {root} gave {b}")


def grow(ctx):
    """old ranks grow to ctx.size; collectives on the grown communicator; the old one still works."""
    f = Fails(ctx)
    n, r = ctx.size, ctx.rank
    old, coord = ctx.params["old"], ctx.params["coordinator"]
    parent = None
    if r < old:
        parent = _old_comm(ctx, old)
        if r == coord:
            uid = parent.get_unique_id()
            f.check(isinstance(uid, UniqueId), f"get_unique_id gave {type(uid).__name__}")
            _publish(ctx, uid)
            new = parent.grow(n, uid)
        else:
            new = parent.grow(n)
    else:
        new = Communicator().grow(n, _receive(ctx), rank=r)
    f.check(type(new) is Communicator and new.is_valid, "grow returned a valid Communicator")
    f.check((new.nranks, new.rank) == (n, r), f"grown communicator is rank {new.rank} of {new.nranks}")
    _check_collectives(f, new, n, r)
    if parent is not None:  # the parent is untouched by the grow (NCCL: destroy it afterwards)
        f.check((parent.nranks, parent.rank) == (old, r), "parent keeps its size")
        z = np.full(4, r + 1, np.float32)
        parent.allreduce(z, z, nc.SUM)
        f.check(np.array_equal(z, np.full(4, old * (old + 1) / 2, np.float32)), f"parent allreduce gave {z}")
        parent.destroy()
    new.destroy()
    return f.result()


def bad_input(ctx):
    """Three processes: ranks 0 and 1 hold a 2-rank communicator, rank 2 joins. Local argument
    errors first, then cross-rank disagreements (every existing rank fails alike, the parent stays
    usable), then a grow that works."""
    f = Fails(ctx)
    r = ctx.rank
    if r == 2:
        uid = _receive(ctx)
        f.raises_saying(NCCLInvalidArgument, "a new rank must take a rank in [2, 3), not 1", Communicator().grow, 3,
                        uid, rank=1)
        f.raises_saying(NCCLInvalidArgument, "a new rank must take a rank in [2, 3), not 3", Communicator().grow, 3,
                        uid, rank=3)
        f.raises_saying(NCCLInvalidArgument, "nRanks 2 must be larger than the communicator's 2 ranks",
                        Communicator().grow, 2, uid, rank=2)
        f.raises_saying(NCCLInvalidArgument, "unique id is not a grow id", Communicator().grow, 3, nc.get_unique_id(),
                        rank=2)
        f.raises_saying(NCCLInvalidArgument, "unique id is a grow id (from ncclCommGetUniqueId)", Communicator.init, 3,
                        2, uid)
        new = Communicator().grow(3, uid, rank=2)
        # an id serves one grow (the coordinator's process, where its root lives, waits for us below)
        f.raises_saying(NCCLInvalidUsage, "unique id was already used", Communicator().grow, 3, uid, rank=2)
        _check_collectives(f, new, 3, 2)
        new.destroy()
        return f.result()
    comm = _old_comm(ctx, 2)
    f.raises_saying(NcclInvalid, "Existing ranks must use an initialized communicator", Communicator().grow, 3)
    f.raises_saying(NcclInvalid, "New ranks must use a null communicator", comm.grow, 3, None, rank=2)
    f.raises_saying(NCCLInvalidArgument, "nRanks 2 must be larger than the communicator's 2 ranks", comm.grow, 2)
    f.raises_saying(NCCLInvalidArgument, "nRanks 1 must be larger", comm.grow, 1)
    f.raises_saying(NCCLInvalidArgument, "unique id is not a grow id", comm.grow, 3, nc.get_unique_id())
    other = Communicator.init_all(1)[0]  # a grow id of another communicator
    f.raises_saying(NCCLInvalidArgument, "uniqueId was made by ncclCommGetUniqueId on another communicator", comm.grow,
                    3, other.get_unique_id())
    other.destroy()
    # No coordinator: every existing rank hears it.
    f.raises_saying(NCCLInvalidUsage, "no rank of comm holds a grow id", comm.grow, 3)
    # Two coordinators (each made an id): rejected everywhere, both ids consumed.
    mine = comm.get_unique_id()
    f.raises_saying(NCCLInvalidUsage, "already made a grow id that no ncclCommGrow consumed", comm.get_unique_id)
    f.raises_saying(NCCLInvalidUsage, "ranks 0 and 1 both made a grow id", comm.grow, 3, mine)
    # Disagreement on the size.
    if r == 0:
        uid = comm.get_unique_id()
        f.raises_saying(NCCLInvalidArgument, "is not the id ncclCommGetUniqueId last returned", comm.grow, 3, mine)
    f.raises_saying(NCCLInvalidUsage, "rank 0 asks for 3 ranks, rank 1 for 4", comm.grow, 3 + r,
                    uid if r == 0 else None)
    # The parent still works, and a proper grow follows.
    z = np.full(3, r + 1, np.int32)
    comm.allreduce(z, z, nc.SUM)
    f.check(np.array_equal(z, np.full(3, 3, np.int32)), f"parent allreduce after failed grows gave {z}")
    if r == 0:
        uid = comm.get_unique_id()
        _publish(ctx, uid)
        new = comm.grow(3, uid)
    else:
        new = comm.grow(3)
    _check_collectives(f, new, 3, r)
    new.destroy()
    comm.destroy()
    return f.result()


def joiner_never_comes(ctx):
    """Both ranks grow to 3; rank 2 never joins: ncclTimeout naming it, and the parent still works."""
    f = Fails(ctx)
    r = ctx.rank
    comm = _old_comm(ctx, 2)
    uid = comm.get_unique_id() if r == 0 else None
    exc = f.raises_saying(NCCLTimeout, "missing rank(s) 2", comm.grow, 3, uid)
    z = np.full(2, r + 1, np.float32)
    comm.allreduce(z, z, nc.SUM)
    f.check(np.array_equal(z, np.full(2, 3, np.float32)), f"parent allreduce after the timeout gave {z}")
    comm.destroy()
    return f.result(status=getattr(exc, "status", None))


def abort_during_grow(ctx):
    """Both ranks grow to 3 with no joiner; another thread aborts the parent: the grow ends with
    ncclInvalidUsage (aborted) long before the deadline."""
    f = Fails(ctx)
    r = ctx.rank
    comm = _old_comm(ctx, 2)
    uid = comm.get_unique_id() if r == 0 else None
    timer = threading.Timer(1.0, comm.abort)
    timer.start()
    t0 = time.monotonic()
    try:
        comm.grow(3, uid)
    except NCCLInvalidUsage:
        pass  # "aborted"; the last-error text is the process's, and the root (rank 0) may write it next
    except NCCLRemoteError as exc:  # the peer's abort reached this rank first
        # In the parent's exchange the peer's abort notice arrives ("aborted"); once the grow's
        # bootstrap runs, the root sees only the peer's connection close, as for an exit.
        peer = f"rank {1 - r} (pid "
        f.check("abort" in exc.last_error or (peer in exc.last_error and "closed its connection" in exc.last_error),
                f"grow ended with {exc.last_error!r}")
    except NcclInvalid:
        pass  # aborted before the call read the handle
    except NCCLError as exc:
        f.check(False, f"grow ended with {type(exc).__name__}: {exc}")
    else:
        f.check(False, "grow returned although its parent was aborted")
    timer.join()
    f.check(time.monotonic() - t0 < 20, "the abort, not the 30 s deadline, ended the grow")
    f.check(not comm.is_valid, "null after abort")
    return f.result()


def joiner_dies(ctx):
    """Ranks 0 and 1 grow to 4; rank 2 joins and is killed (SIGKILL) while the bootstrap waits for
    rank 3, who never comes: the others get ncclRemoteError naming rank 2."""
    f = Fails(ctx)
    r = ctx.rank
    if r == 2:
        threading.Timer(1.5, os.kill, (os.getpid(), 9)).start()
        Communicator().grow(4, _receive(ctx), rank=2)
        return f.result()  # never reached
    comm = _old_comm(ctx, 2)
    if r == 0:
        uid = comm.get_unique_id()
        _publish(ctx, uid)
    else:
        uid = None
    f.raises_saying(NCCLRemoteError, "rank 2", comm.grow, 4, uid)
    comm.destroy()
    return f.result()


def grow_bindings(ctx):
    """The same through nccl.bindings: comm_get_unique_id, comm_grow (0.3.1 form, newcomm slot),
    then all_reduce, all_gather and broadcast on the grown handle."""
    import nccl.bindings.nccl as b

    f = Fails(ctx)
    n, r, old = ctx.size, ctx.rank, ctx.params["old"]
    box = b.PointerBox()
    parent = None
    if r < old:
        pbox = b.PointerBox()
        b.comm_init_rank(pbox.address, old, b.UniqueId.from_buffer(bytearray(ctx.uid)), r)
        parent = pbox.ptr
        if r == 0:
            uid = b.comm_get_unique_id(parent)
            _publish(ctx, uid)
            b.comm_grow(parent, n, uid.ptr, -1, box.address, 0)
        else:
            b.comm_grow(parent, n, 0, -1, box.address, 0)
    else:
        uid = b.UniqueId.from_buffer(bytearray(bytes(_receive(ctx))))
        b.comm_grow(0, n, uid.ptr, r, box.address, 0)
    comm = box.ptr
    f.check((b.comm_count(comm), b.comm_user_rank(comm)) == (n, r), "grown size and rank")
    f32, i32 = int(b.DataType.Float32), int(b.DataType.Int32)
    x = np.full(6, r + 1, np.float32)
    y = np.zeros(6, np.float32)
    b.all_reduce(x.ctypes.data, y.ctypes.data, 6, f32, int(b.RedOp.Sum), comm, 0)
    f.check(np.array_equal(y, np.full(6, n * (n + 1) / 2, np.float32)), f"all_reduce gave {y}")
    g = np.zeros(2 * n, np.int32)
    s = np.full(2, r, np.int32)
    b.all_gather(s.ctypes.data, g.ctypes.data, 2, i32, comm, 0)
    f.check(np.array_equal(g, np.repeat(np.arange(n, dtype=np.int32), 2)), f"all_gather gave {g}")
    bc = np.arange(4, dtype=np.int32) * 3 if r == n - 1 else np.zeros(4, np.int32)
    b.broadcast(bc.ctypes.data, bc.ctypes.data, 4, i32, n - 1, comm, 0)
    f.check(np.array_equal(bc, np.arange(4, dtype=np.int32) * 3), f"broadcast gave {bc}")
    b.comm_destroy(comm)
    if parent is not None:
        b.comm_destroy(parent)
    return f.result()
