"""Rank-side checks of the short creation forms on the host backend: they return Comm objects,
which work wherever the int handles of 0.3.1 did; a communicator split inside a group is filled
into its Comm when the group ends (the host backend creates it there)."""

import sys

import numpy as np

import nccl.bindings.nccl as b
import reference as R

DT, OP = R.DT, b.RedOp


def _all_reduce_ok(comm, ranks, rank, salt, failures, label):
    """An AllReduce Sum over comm, through the Comm object and through its int, against numpy."""
    k = 11
    xs = [R.make_input(DT.Float32, k, r, salt) for r in ranks]
    want = R.reduce_ref(xs, OP.Sum, DT.Float32)
    for how, handle in (("Comm", comm), ("int", int(comm))):
        out = np.zeros(k, np.float32)
        b.all_reduce(xs[ranks.index(rank)].ctypes.data, out.ctypes.data, k, DT.Float32, OP.Sum, handle, 0)
        if not R.same_bits(out, want):
            failures.append(f"{label}: AllReduce through the {how} gave {out}, not {want}")


def short_forms(ctx):
    failures = []
    n, r = ctx.size, ctx.rank
    comm = b.comm_init_rank(n, ctx.uid, r)
    try:
        if type(comm) is not b.Comm or not comm or comm != comm.handle or hash(comm) != hash(comm.handle):
            failures.append(f"comm_init_rank's short form returned {comm!r}")
        if (b.comm_count(comm), b.comm_user_rank(comm)) != (n, r):
            failures.append("count/rank through the Comm are wrong")
        _all_reduce_ok(comm, list(range(n)), r, 1, failures, "world")

        # split inside a group: the host backend writes the new communicator at the group's end
        # references beyond the local `child`, against a probe local of the same scope: getrefcount
        # counts its argument before CPython 3.14 and borrows a local's reference since
        probe = object()
        b.group_start()
        child = b.comm_split(comm, r % 2, -r, 0)
        pending = (bool(child), child.handle, sys.getrefcount(child) - sys.getrefcount(probe))
        b.group_end()
        if pending != (False, 0, 1):
            failures.append(f"inside the group the split Comm was {pending} (empty, kept by the group)")
        members = sorted((p for p in range(n) if p % 2 == r % 2), reverse=True)
        extra = sys.getrefcount(child) - sys.getrefcount(probe)
        if not child or extra != 0:
            failures.append(f"after the group the split Comm is {child!r}, {extra} references beyond its local")
        elif (b.comm_count(child), b.comm_user_rank(child)) != (len(members), members.index(r)):
            failures.append("the split communicator has the wrong members")
        else:
            _all_reduce_ok(child, members, r, 2, failures, "split in a group")
            b.comm_destroy(child)

        # the 0.3.1 form, given a Comm's handle_ptr, fills that Comm
        twin = b.Comm()
        status = b.comm_split(comm, 0, r, twin.handle_ptr, 0)
        if status != 0 or not twin or b.comm_count(twin) != n:
            failures.append(f"0.3.1-form split into handle_ptr: status {status}, {twin!r}")
        else:
            _all_reduce_ok(twin, list(range(n)), r, 3, failures, "0.3.1 form")
            b.comm_destroy(twin)

        # NOCOLOR: an empty Comm, refused as a null communicator afterwards
        none = b.comm_split(comm, b.NCCL_SPLIT_NOCOLOR, 0, 0)
        if none or none.handle != 0:
            failures.append(f"a NOCOLOR split returned {none!r}")
    finally:
        b.comm_destroy(comm)
    return {"failures": failures}
