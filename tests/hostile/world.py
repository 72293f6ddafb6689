"""What one case runs against: the communicators, the honest arguments of each callable, and the
actions the hostile callbacks take (catalogue.act).

The honest value of a parameter comes from its name (BASE), a few names meaning something else in
one callable (OVERRIDE); anything else is 0. Raw addresses (RAW) are host arrays the world keeps for
the case. The communicators are checked after every case and made again when a case (or its
honest call: comm_destroy, revoke, __exit__ ...) used them up. Two ranks share their ids through
files in HOSTILE_DIR; one rank makes a fresh id from its own process.
"""

import mmap
import os
import time
from pathlib import Path

import numpy as np

import nccl._ext as ext
import nccl.bindings.nccl as b
import nccl.bindings.rocm_extensions as rx
import nccl.core as nc

OMIT = object()
N = 64  # elements of every honest buffer (int8 for nccl.core, float32 for the bindings)

# Raw addresses, handles, slots and the counts that size raw memory: at these parameters of the
# bindings a lying value (catalogue.Entry.lies) is a bad pointer, the caller's responsibility
# (docs/api/bindings.md#raw-pointers); nccl.core's raw values are its stream handles and ptr.
RAW = {
    "bindings": {"sendbuff", "recvbuff", "buff", "localbuff", "acc", "ptr", "scalar", "config", "comm", "newcomm",
                 "win", "handle", "window", "peer_win", "dev_comm", "reqs", "team", "cft_team", "out_handle",
                 "out_req", "multimem", "signal_descs", "comm_ids", "comm_id", "unique_id", "devlist",
                 "exclude_ranks_list", "sendcounts", "sdispls", "recvcounts", "rdispls", "count", "recvcount",
                 "sendcount", "size", "offset", "peer_win_offset", "stream", "owner", "data", "buffer"},
    "core": {"stream", "ptr"},
}


class World:
    def __init__(self, nranks, rank, uid_dir=None):
        self.nranks, self.rank, self.uid_dir, self.generation = nranks, rank, uid_dir, 0
        self.core = self.bcomm = None
        self.bcomm_destroyed = False  # by a callback, through its raw handle (destroy_comm)
        self.begin("core", None)
        self.ensure()

    # ---- communicators ----

    def uid(self):
        """A unique id every rank of the world gets: from a file at two ranks (rank 0 writes it)."""
        if self.nranks == 1:
            return bytes(b.get_unique_id())
        self.generation += 1
        path = Path(self.uid_dir) / f"uid-{self.generation}"
        if self.rank == 0:
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(bytes(b.get_unique_id()))
            os.replace(tmp, path)
        deadline = time.monotonic() + 30
        while not path.exists():
            if time.monotonic() > deadline:
                raise TimeoutError("no unique id from rank 0")
            time.sleep(0.005)
        return path.read_bytes()

    def _alive(self, probe):
        try:
            probe()
            return True
        except Exception:
            return False

    def ensure(self):
        """Both communicators open and working, made again when a case used one up."""
        x = np.ones(1, np.int8)
        if self.core is None or not self._alive(lambda: self.core.allreduce(x, x, nc.SUM)):
            self._drop_core()
            self.core = nc.Communicator.init(self.nranks, self.rank, nc.UniqueId.from_bytes(self.uid()))
        if self.bcomm is None or not self._alive(lambda: b.all_reduce(x.ctypes.data, x.ctypes.data, 1, 0, 0,
                                                                        self.bcomm, 0)):
            self._drop_bcomm()
            self.bcomm = b.comm_init_rank(self.nranks, b.UniqueId.from_buffer(bytearray(self.uid())), self.rank)

    def _drop_core(self):
        if self.core is not None:
            try:
                self.core.abort()
            except Exception:
                pass
        self.core = None

    def _drop_bcomm(self):
        if self.bcomm is not None and not self.bcomm_destroyed:
            try:
                b.comm_abort(self.bcomm)
            except Exception:
                pass
        self.bcomm, self.bcomm_destroyed = None, False

    def close(self):
        self._drop_core()
        self._drop_bcomm()

    # ---- one case ----

    def begin(self, layer, target):
        """A new case of `layer` whose callbacks act on `target` (the Communicator the call uses;
        None for the bindings, whose communicator is bcomm)."""
        self.layer, self.target = layer, target
        self.lists, self.closables, self.cleanups, self.keep = [], [], [], []

    def end(self, result, made):
        """Releases what the case made and, when the call made it (made: not a constructor, which
        only wraps a handle), what it returned; closes a group the case left open."""
        for r in result if isinstance(result, list) else [result]:
            if made:
                self._release(r)
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception:
                pass
        while ext._group_depth() > 0:
            try:
                b.group_end()
            except Exception:
                pass
        for c in self.closables:
            if isinstance(c, (memoryview, bytearray)):
                continue  # freed with their last reference
            try:
                c.close()
            except Exception:
                pass
        self.lists, self.closables, self.cleanups, self.keep = [], [], [], []
        self.ensure()

    def _release(self, r):
        try:
            if isinstance(r, nc.Communicator) and r is not self.core and r.is_valid:
                r.abort()
            elif isinstance(r, nc.CommResource):
                r.close()
            elif isinstance(r, b.Comm) and r and r != self.bcomm:
                b.comm_abort(r)
        except Exception:
            pass

    # ---- what callbacks do (catalogue.act) ----

    def destroy_comm(self, abort):
        if self.layer == "core":
            c = self.target if isinstance(self.target, nc.Communicator) else self.core
            c.abort() if abort else c.destroy()
        elif self.bcomm is not None and not self.bcomm_destroyed:
            # a raw handle: the call then passes a destroyed communicator, which the bindings
            # leave to the caller (the host backend reports it)
            self.bcomm_destroyed = True
            (b.comm_abort if abort else b.comm_destroy)(self.bcomm)

    def close_buffers(self):
        first = None
        for c in self.closables:
            try:
                if isinstance(c, bytearray):
                    c.clear()
                elif isinstance(c, (memoryview, mmap.mmap)):
                    c.release() if isinstance(c, memoryview) else c.close()
                else:
                    c.close()
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first

    def clear_lists(self):
        for items in self.lists:
            items.clear()

    # ---- honest values ----

    def int8(self, n=N):
        """A memoryview of a bytearray (int8): both can be closed by a callback."""
        raw = bytearray(range(n))
        view = memoryview(raw).cast("b")
        self.closables += [view, raw]
        return view

    def shim_buffer(self, n=N):
        buf = nc.mem_alloc(n)
        self.closables.append(buf)
        return buf

    def mmap(self):
        m = mmap.mmap(-1, N)
        self.closables.append(m)
        return m

    def array(self, n=N, dtype=np.float32):
        a = np.ones(n, dtype)
        self.keep.append(a)
        return a

    def addr(self, n=N):
        return self.array(n).ctypes.data

    def listed(self, items):
        self.lists.append(items)
        return items

    def slot(self, kind):
        box = b.PointerBox()
        self.keep.append(box)

        def release():
            if box.ptr:
                (b.comm_abort if kind == "comm" else lambda h: b.comm_window_deregister(self.bcomm, h))(box.ptr)
        self.cleanups.append(release)
        return box.address

    def bwindow(self):
        w = b.comm_window_register(self.bcomm, self.addr(), N * 4, 0)
        self.cleanups.append(lambda: b.comm_window_deregister(self.bcomm, w))
        return w

    def registration(self):
        h = b.comm_register(self.bcomm, self.addr(), N * 4)
        self.cleanups.append(lambda: b.comm_deregister(self.bcomm, h))
        return h

    def red_op(self):
        return b.red_op_create_pre_mul_sum(self.addr(1), 7, 0, self.bcomm)

    def mem(self):
        p = b.mem_alloc(N)
        self.cleanups.append(lambda: b.mem_free(p))
        return p

    def core_window(self):
        w = self.core.register_window(self.shim_buffer())
        self.cleanups.append(w.close)
        return w


def _per_rank(w, displs=False):
    n = w.nranks
    block = (N if w.layer == "core" else 16) // n
    return w.listed([block * i if displs else block for i in range(n)])


# Honest values by parameter name, for both layers: BASE[layer][name](world)
BASE = {
    "core": {
        "sendbuf": lambda w: w.int8(), "recvbuf": lambda w: w.shim_buffer(), "local_buffer": lambda w: w.int8(),
        "bias": lambda w: w.int8(), "buffer": lambda w: w.shim_buffer(), "op": lambda w: nc.SUM,
        "root": lambda w: 0, "peer": lambda w: 0, "stream": lambda w: None,
        "config": lambda w: nc.NCCLCollConfig(), "scalar": lambda w: 2.0, "datatype": lambda w: nc.NcclDataType.INT8,
        "nranks": lambda w: w.nranks, "rank": lambda w: w.rank,
        "unique_id": lambda w: nc.UniqueId.from_bytes(w.uid()), "devices": lambda w: w.listed([0]),
        "color": lambda w: 0, "key": lambda w: 0, "exclude_ranks": lambda w: w.listed([]), "flag": lambda w: 0,
        "stat": lambda w: 0, "flags": lambda w: 0, "descs": lambda w: w.listed([nc.WaitSignalDesc(0, 0)]),
        "peer_window": lambda w: w.core_window(), "sendcounts": _per_rank,
        "sdispls": lambda w: _per_rank(w, True), "recvcounts": _per_rank, "rdispls": lambda w: _per_rank(w, True),
        "reqs": lambda w: b.DevCommRequirements(), "multimem": lambda w: (), "handles": lambda w: (),
        "comm": lambda w: w.core, "trace_buffer": lambda w: 0, "spec": lambda w: "",
    },
    "bindings": {
        "size": lambda w: N, "ptr": lambda w: w.mem(), "result": lambda w: 1, "comm": lambda w: w.bcomm,
        "nranks": lambda w: w.nranks, "comm_id": lambda w: b.UniqueId.from_buffer(bytearray(w.uid())),
        "rank": lambda w: w.rank,
        "ndev": lambda w: 1, "devlist": lambda w: w.listed([0]), "newcomm": lambda w: w.slot("comm"),
        "myrank": lambda w: w.rank, "n_id": lambda w: 1, "comm_ids": lambda w: w.uid(),
        "exclude_ranks_list": lambda w: w.listed([]), "n_ranks": lambda w: 2, "sendbuff": lambda w: w.addr(),
        "recvbuff": lambda w: w.addr(), "buff": lambda w: w.addr(), "localbuff": lambda w: w.addr(),
        "acc": lambda w: w.addr(), "count": lambda w: 16, "recvcount": lambda w: 16, "sendcount": lambda w: 16,
        "datatype": lambda w: 7, "scalar": lambda w: w.addr(1), "handle": lambda w: w.registration(),
        "win": lambda w: w.bwindow(), "peer_win": lambda w: w.bwindow(), "window": lambda w: w.bwindow(),
        "n_desc": lambda w: 1, "signal_descs": lambda w: bytes(b.WaitSignalDesc()),
        "reqs": lambda w: b.DevCommRequirements(), "dev_comm": lambda w: b.DevComm(),
        "team": lambda w: b.team_world(w.bcomm), "cft_team": lambda w: b.team_world(w.bcomm),
        "n_barriers": lambda w: 1, "out_req": lambda w: b.DevResourceRequirements(),
        "n_blocks": lambda w: 1, "n_slots": lambda w: 1, "max_elts": lambda w: 1, "max_elt_size": lambda w: 4,
        "multimem": lambda w: b.MultimemHandle(), "sendcounts": _per_rank, "sdispls": lambda w: _per_rank(w, True),
        "recvcounts": _per_rank, "rdispls": lambda w: _per_rank(w, True),
        "buffer": lambda w: bytearray(4096), "data": lambda w: bytes(4096), "spec": lambda w: "",
    },
}

# A name meaning something else in one callable: (callable id, parameter) -> honest value
OVERRIDE = {
    ("bindings.comm_init_rank_config", "comm"): lambda w: w.slot("comm"),
    ("bindings.comm_init_rank", "comm"): lambda w: w.slot("comm"),
    ("bindings.comm_window_register", "win"): lambda w: w.slot("window"),
    ("bindings.red_op_destroy", "op"): lambda w: w.red_op(),
    ("bindings.param_get_parameter", "key"): lambda w: "NCCL_DEBUG",
    ("bindings.set_encryption", "config"): lambda w: b.EncryptionConfig(),
    ("bindings.lsa_barrier_create_requirement", "out_handle"): lambda w: b.LsaBarrierHandle(),
    ("bindings.gin_barrier_create_requirement", "out_handle"): lambda w: b.GinBarrierHandle(),
    ("bindings.ll_a2a_create_requirement", "out_handle"): lambda w: b.LLA2AHandle(),
    ("core.Communicator._require", "op"): lambda w: "x",
    ("core.Communicator.init_all", "devices"): lambda w: 1,
    ("core.Communicator.__exit__", "exc_type"): lambda w: None,
    ("core.Communicator.__exit__", "exc"): lambda w: None,
    ("core.Communicator.__exit__", "tb"): lambda w: None,
    ("core.CommResource.__exit__", "exc_type"): lambda w: None,
    ("core.Communicator()", "ptr"): lambda w: 0,
    ("core.Communicator.create_pre_mul_sum", "datatype"): lambda w: None,
    ("core.DevCommResource.multimem_handle", "team"): lambda w: 0,
}
for _k in ("initialize", "init", "split", "shrink", "grow"):
    OVERRIDE[(f"core.Communicator.{_k}", "config")] = lambda w: nc.NCCLConfig()
for _k in ("all_reduce_config", "reduce_config", "reduce_scatter_config", "all_gather_config", "allto_all_config",
           "broadcast_config", "gather_config", "scatter_config"):
    OVERRIDE[(f"bindings.{_k}", "config")] = lambda w: b.CollConfig()


def _struct_dtype(tp):
    """nccl.bindings.nccl's numpy dtype of a struct wrapper class (team_dtype for Team ...)."""
    key = tp.__name__.lower()
    for name in dir(b):
        if name.endswith("_dtype") and name[:-6].replace("_", "") == key:
            return getattr(b, name)
    return None


def _struct_value(world, tp, name):
    """The honest argument of a struct wrapper's from_buffer, from_data and from_ptr."""
    size = len(bytes(tp()))
    if name == "buffer":
        return bytearray(size)
    if name == "data":
        return np.zeros(1, _struct_dtype(tp))
    if name == "ptr":
        return world.array(size, np.uint8).ctypes.data
    return OMIT


def honest(world, callable_, name):
    tp = getattr(ext, callable_.owner, None)
    if callable_.kind == "classmethod" and tp is not None and _struct_dtype(tp) is not None:
        value = _struct_value(world, tp, name)
        if value is not OMIT:
            return value
    fn = OVERRIDE.get((callable_.id, name)) or BASE[callable_.layer].get(name)
    return fn(world) if fn is not None else 0


def receiver(world, c):
    """What the call is made on: the module function, the class, or an instance made for the case."""
    if c.kind == "function":
        return getattr(b if c.id.startswith("bindings.") else rx, c.name)
    tp = getattr(ext, c.owner)
    if c.kind in ("constructor", "classmethod"):
        return tp
    if c.owner == "Communicator":
        return nc.Communicator() if c.name == "initialize" else world.core
    if c.owner == "RegisteredWindowHandle":
        return world.core_window()
    if c.owner == "CommResource":
        return nc.CommResource(world.core)
    if c.owner == "DevCommResource":
        return world.core.create_dev_comm(nc.NCCLDevCommRequirements())  # the host backend has none
    if c.owner in ("Comm", "Window"):
        return tp(0)
    return tp()
