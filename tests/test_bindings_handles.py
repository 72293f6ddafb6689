"""Comm and Window, the handle objects of nccl4py 0.5+ (docs/compatibility.md#handles).

Their surface (0.6.0's: handle, handle_ptr, __int__, __index__, __bool__, not picklable), the int
behaviour 0.2.0 and RCCL-fork code relied on when the same calls returned ints (==, hash, hex(),
%x, format specs, truth), and, against the stub NCCL: both creation conventions side by side,
handles filled at the end of a group (the stub's group-fill mode writes them only then), the
wrong kind of handle, handles where ints are expected, and reference counts.

Constructing handles loads no library, so the surface is checked in this process; everything that
calls a binding runs in the stub's child interpreter.
"""

import copy
import pickle

import pytest

import nccl.bindings as nb
import nccl.bindings.nccl as b

ADDR = 0x7F00_5555_0000
HIGH = 0xFFFF_8000_0000_1230


# ---- the surface ----

@pytest.mark.parametrize("cls", [b.Comm, b.Window])
def test_surface(cls):
    h = cls(ADDR)
    assert h.handle == ADDR and type(h.handle) is int
    assert int(h) == ADDR and h.__index__() == ADDR and operator_index(h) == ADDR
    assert bool(h) is True and bool(cls()) is False and bool(cls(0)) is False
    assert cls().handle == 0 and cls(handle=5).handle == 5 and cls(HIGH).handle == HIGH
    assert cls(cls(ADDR)).handle == ADDR  # a handle of the same type is taken by value
    assert repr(h) == f"<{cls.__name__} handle={ADDR:#x}>" and str(h) == repr(h)
    assert repr(cls()) == f"<{cls.__name__} handle=0x0>"
    assert cls.__module__ == "nccl.bindings.nccl" and cls.__name__ in ("Comm", "Window")


@pytest.mark.parametrize("cls", [b.Comm, b.Window])
def test_handle_ptr_is_the_objects_own_stable_slot(cls):
    import ctypes

    h, other = cls(ADDR), cls(ADDR)
    assert h.handle_ptr == h.handle_ptr and h.handle_ptr != other.handle_ptr and h.handle_ptr != 0
    # the slot holds the handle: what a library writes there is the handle
    assert ctypes.c_void_p.from_address(h.handle_ptr).value == ADDR
    ctypes.c_void_p.from_address(h.handle_ptr).value = 0x1234
    assert h.handle == 0x1234 and int(h) == 0x1234 and h == 0x1234


@pytest.mark.parametrize("cls", [b.Comm, b.Window])
def test_compares_and_hashes_as_its_int(cls):
    h = cls(ADDR)
    assert h == ADDR and ADDR == h and not (h != ADDR) and h != ADDR + 1
    assert hash(h) == hash(ADDR) and hash(cls(HIGH)) == hash(HIGH) and hash(cls()) == hash(0)
    assert h == cls(ADDR) and h != cls(ADDR + 1)
    assert h == float(ADDR) and h < ADDR + 1 and h >= ADDR
    assert {ADDR: "x"}[h] == "x" and h in {ADDR} and ADDR in {h}
    assert [ADDR, 7].index(h) == 0 and h in [0, ADDR]
    assert h != "x" and h != None  # noqa: E711 - the comparison itself is under test
    with pytest.raises(TypeError):
        h < "x"  # noqa: B015


def test_a_comm_and_a_window_are_not_comparable():
    assert b.Comm(5) != b.Window(5) and not (b.Comm(5) == b.Window(5))
    with pytest.raises(TypeError):
        b.Comm(5) < b.Window(6)  # noqa: B015


@pytest.mark.parametrize("cls", [b.Comm, b.Window])
def test_formats_as_its_int(cls):
    h = cls(0xBEEF)
    assert hex(h) == "0xbeef" and oct(h) == oct(0xBEEF) and bin(h) == bin(0xBEEF)
    assert "%x" % h == "beef" and "%#x" % h == "0xbeef" and "%d" % h == str(0xBEEF)
    assert f"{h:x}" == "beef" and f"{h:#018x}" == "0x000000000000beef" and format(h, "d") == "48879"
    assert f"{h}" == repr(h) and format(h, "") == str(h)
    assert [10, 20, 30][cls(1)] == 20  # __index__ makes it an index too


@pytest.mark.parametrize("cls", [b.Comm, b.Window])
def test_not_picklable_or_copyable(cls):
    msg = f"cannot pickle '{cls.__name__}' object: a handle is valid only in the process that made it"
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError, match=msg):
            pickle.dumps(cls(ADDR), protocol=proto)
    with pytest.raises(TypeError, match=msg):
        copy.copy(cls(ADDR))


def test_final_types():
    for cls in (b.Comm, b.Window):
        with pytest.raises(TypeError, match="not an acceptable base type"):
            type("Sub", (cls,), {})


def test_bad_constructor_arguments():
    cases = [
        (lambda: b.Comm("x"), TypeError, "Comm() argument 'handle' must be an int, not str"),
        (lambda: b.Comm(1.5), TypeError, "Comm() argument 'handle' must be an int, not float"),
        (lambda: b.Comm(b.Window(1)), TypeError, "Comm() argument 'handle' must be an int, not Window"),
        (lambda: b.Window(b.Comm(1)), TypeError, "Window() argument 'handle' must be an int, not Comm"),
        (lambda: b.Comm(2**64), OverflowError, "Comm() argument 'handle' is out of range for a 64-bit value"),
        (lambda: b.Comm(1, 2), TypeError, None),
        (lambda: b.Window(ptr=1), TypeError, None),
    ]
    for make, exc, message in cases:
        with pytest.raises(exc) as info:
            make()
        if message is not None:
            assert str(info.value) == message


def test_exported_from_both_modules():
    assert nb.Comm is b.Comm and nb.Window is b.Window
    assert {"Comm", "Window"} <= set(b.__all__) and {"Comm", "Window"} <= set(nb.__all__)


def test_version_is_the_header_version():
    from nccl import _ext

    # nccl4py 0.6.0 reports the NCCL headers it implements: those of NCCL 2.32.3 (2.32.3 is 23203)
    assert b.__version__ == "2.32.3"
    assert _ext._ABI_VERSION == 2 * 10000 + 32 * 100 + 3


def operator_index(h):
    import operator

    return operator.index(h)


# ---- against the stub: both conventions, handles passed back, groups ----

ID = bytes(range(7, 135))

# (short-form call, 0.3.1-form call with `slot` for the slot address, C symbol, kind), as source text
CREATIONS = [
    ("b.comm_init_rank(4, ID, 1)", "b.comm_init_rank(slot, 4, ID, 1)", "ncclCommInitRank", "Comm"),
    ("b.comm_init_rank_config(4, ID, 1, 0)", "b.comm_init_rank_config(slot, 4, ID, 1, 0)",
     "ncclCommInitRankConfig", "Comm"),
    ("b.comm_init_rank_scalable(4, 1, 1, ID, 0)", "b.comm_init_rank_scalable(slot, 4, 1, 1, ID, 0)",
     "ncclCommInitRankScalable", "Comm"),
    ("b.comm_split(parent, 1, 0, 0)", "b.comm_split(parent, 1, 0, slot, 0)", "ncclCommSplit", "Comm"),
    ("b.comm_shrink(parent, [0], 1, 0, 0)", "b.comm_shrink(parent, [0], 1, slot, 0, 0)", "ncclCommShrink", "Comm"),
    ("b.comm_grow(parent, 5, 0, 4, 0)", "b.comm_grow(parent, 5, 0, 4, slot, 0)", "ncclCommGrow", "Comm"),
    ("b.comm_window_register(parent, 0x1000, 64, 0)", "b.comm_window_register(parent, 0x1000, 64, slot, 0)",
     "ncclCommWindowRegister", "Window"),
]
SYMS = [c[2] for c in CREATIONS]

CREATION_PRELUDE = f"""
        import sys
        ID = {ID!r}

        def extra_refs(obj, probe):
            # references beyond the caller's local: getrefcount of a local counts the argument
            # before CPython 3.14 and borrows it since, so a probe local of the same scope is the base
            return sys.getrefcount(obj) - sys.getrefcount(probe)
        parent = b.Comm(0x9A9A_0000)
        calls = {{sym: (short, old, kind) for short, old, sym, kind in {CREATIONS!r}}}

        def make(text, slot=None):
            return eval(text, {{"b": b, "ID": ID, "parent": parent, "slot": slot}})
"""


@pytest.mark.parametrize("variant", ["nccl", "rccl"])
def test_both_conventions_side_by_side(stub_python, variant):
    r = stub_python(variant).run(CREATION_PRELUDE + """
        result = {}
        probe = object()
        for sym, (short, old, kind) in calls.items():
            stub.reset()
            stub.set_out(sym, 0x4E00_0000 + len(result))
            new = make(short)
            recorded_new = stub.calls()
            box = b.PointerBox()
            status_box = make(old, box.address)
            target = getattr(b, kind)()
            status_ptr = make(old, target.handle_ptr)
            result[sym] = (handle(new), extra_refs(new, probe), recorded_new, status_box, box.ptr, box.address,
                           status_ptr, handle(target), [c for c in stub.calls()[1:]])
    """)
    for i, (short, old, sym, kind) in enumerate(CREATIONS):
        new, refs, recorded_new, status_box, box_ptr, box_addr, status_ptr, target, recorded_old = r[sym]
        value = 0x4E00_0000 + i
        assert new[:2] == (kind, value), sym          # the short form returns the handle object
        assert refs == 0, sym                          # held by `new` alone
        (name, args), = recorded_new
        assert name == sym and new[2] in args, sym     # the library wrote into the object's own slot
        assert (status_box, box_ptr) == (0, value), sym              # 0.3.1 form: the status, the box filled
        assert (status_ptr, target[:2]) == (0, (kind, value)), sym   # ... or a handle's handle_ptr
        # the 0.3.1 calls passed the caller's slot where the short form passed the object's own
        slot = args.index(new[2])
        assert [n for n, _ in recorded_old] == [sym, sym], sym
        assert (recorded_old[0][1][slot], recorded_old[1][1][slot]) == (box_addr, target[2]), sym


def test_a_returned_handle_goes_back_into_every_kind_of_call(stub_python):
    r = stub_python("nccl").run("""
        stub.set_out("ncclCommInitRank", 0xC0_0000)
        stub.set_out("ncclCommWindowRegister", 0xD0_0000)
        comm = b.comm_init_rank(2, bytes(128), 0)
        win = b.comm_window_register(comm, 0x1000, 64, 0)
        stub.reset()
        b.all_reduce(1, 2, 3, 7, 0, comm, 0)
        b.comm_count(comm)
        child = b.comm_split(comm, 0, 0, 0)
        b.put_signal(1, 2, 7, 0, win, 0, 0, 0, 0, comm, 0)
        b.win_get_user_ptr(comm, win)
        b.get_peer_device_pointer(win, 8, 1)
        b.comm_window_deregister(comm, win)
        b.comm_destroy(child)
        b.comm_destroy(comm)
        result = stub.calls()
    """)
    comm, win = 0xC0_0000, 0xD0_0000
    names = [n for n, _ in r]
    assert names == ["ncclAllReduce", "ncclCommCount", "ncclCommSplit", "ncclPutSignal", "ncclWinGetUserPtr",
                     "ncclGetPeerDevicePointer", "ncclCommWindowDeregister", "ncclCommDestroy", "ncclCommDestroy"]
    args = dict(zip(range(len(r)), (a for _, a in r)))
    assert args[0][5] == comm and args[1][0] == comm and args[2][0] == comm
    assert args[3][4] == win and args[3][9] == comm
    assert args[4][:2] == (comm, win) and args[5][0] == win and args[6] == (comm, win)
    assert args[7][0] not in (0, comm) and args[8] == (comm,)  # the child, as the stub wrote it


def test_handles_are_filled_at_the_group_end(stub_python):
    """With the stub in group-fill mode, a handle made inside a group stays empty until the
    outermost group end; the binding keeps it alive until then even when the caller drops it."""
    r = stub_python("nccl").run(CREATION_PRELUDE + """
        import gc

        def count(cls):
            gc.collect()
            return sum(type(o) is cls for o in gc.get_objects())

        def one(sym, short, old, kind):
            stub.reset()
            stub.set_group_fill(1)
            stub.set_out(sym, 0x6E00_0000)
            cls = getattr(b, kind)
            live = count(cls)
            probe = object()
            b.group_start()
            b.group_start()
            h = make(short)
            target = cls()
            status = make(old, target.handle_ptr)
            make(short)  # dropped at once: the group keeps it until its end
            inside = (bool(h), h.handle, target.handle, extra_refs(h, probe), count(cls) - live)
            b.group_end()
            middle = (h.handle, target.handle)
            b.group_end()
            after = (handle(h)[:2], handle(target)[:2], extra_refs(h, probe), status, count(cls) - live)
            return inside, middle, after

        result = {sym: one(sym, *v) for sym, v in calls.items()}
    """)
    for short, old, sym, kind in CREATIONS:
        inside, middle, after = r[sym]
        # empty inside the group; held by `h` and the group's list
        assert inside == (False, 0, 0, 1, 3), sym
        assert middle == (0, 0), sym  # an inner group end does not run the group
        assert after == ((kind, 0x6E00_0000), (kind, 0x6E00_0000), 0, 0, 2), sym  # the dropped one is gone


def test_comm_init_all_in_a_group(stub_python):
    r = stub_python("nccl").run("""
        stub.set_group_fill(1)
        stub.set_out("ncclCommInitAll", 0xA1_0000)
        b.group_start()
        comms = b.comm_init_all(2, None)
        b.group_end()
        result = [handle(c)[:2] for c in comms]
    """)
    assert r == [("Comm", 0xA1_0000), ("Comm", 0xA1_0001)]


def test_failed_creation_returns_no_handle(stub_python):
    r = stub_python("nccl").run(CREATION_PRELUDE + """
        import gc

        def count(cls):
            gc.collect()
            return sum(type(o) is cls for o in gc.get_objects())

        def one(sym, short, old, kind):
            stub.reset()
            stub.script(sym, 5)
            cls = getattr(b, kind)
            live = count(cls)
            outside = catch(make, short)[0]
            b.group_start()
            inside = catch(make, short)[0]
            b.group_end()
            return (outside, inside, count(cls) - live)

        result = {sym: one(sym, *v) for sym, v in calls.items()}
    """)
    for sym in SYMS:
        assert r[sym] == ("NCCLInvalidUsage", "NCCLInvalidUsage", 0), sym


def test_empty_and_wrong_handles_are_refused_before_the_call(stub_python):
    r = stub_python("nccl").run("""
        result = [
            catch(b.all_reduce, 1, 2, 3, 7, 0, b.Comm(), 0)[:2],
            catch(b.comm_destroy, b.Comm())[:2],
            catch(b.win_get_user_ptr, 1, b.Window())[:2],
            catch(b.all_reduce, 1, 2, 3, 7, 0, b.Window(5), 0)[:2],
            catch(b.get_lsa_device_pointer, b.Comm(5), 0, 0)[:2],
            catch(b.comm_split, b.Window(5), 0, 0, 0)[:2],
            # a handle where an int is expected: a buffer, a count, a stream, a slot address
            catch(b.all_reduce, b.Comm(5), 2, 3, 7, 0, 4, 0)[:2],
            catch(b.all_reduce, 1, 2, b.Window(3), 7, 0, 4, 0)[:2],
            catch(b.all_reduce, 1, 2, 3, 7, 0, 4, b.Comm(5))[:2],
            catch(b.comm_init_rank, b.Comm(5), 2, bytes(128), 0)[:2],
            catch(b.comm_window_register, 1, 2, 3, b.Window(), 0)[:2],
            # a joining rank of comm_grow may pass an empty Comm (NCCL's NULL)
            catch(b.comm_grow, b.Comm(), 2, 0, 1, 0)[0],
            stub.calls(),
        ]
    """)
    *outcomes, grow, calls = r
    assert outcomes == [
        ("NCCLNullHandleError", "all_reduce() argument 'comm' must not be a null communicator"),
        ("NCCLNullHandleError", "comm_destroy() argument 'comm' must not be a null communicator"),
        ("NCCLNullHandleError", "win_get_user_ptr() argument 'win' must not be a null window"),
        ("TypeError", "all_reduce() argument 'comm' must be a Comm or an int, not Window"),
        ("TypeError", "get_lsa_device_pointer() argument 'window' must be a Window or an int, not Comm"),
        ("TypeError", "comm_split() argument 'comm' must be a Comm or an int, not Window"),
        ("TypeError", "all_reduce() argument 'sendbuff' must be an int, not Comm"),
        ("TypeError", "all_reduce() argument 'count' must be an int, not Window"),
        ("TypeError", "all_reduce() argument 'stream' must be an int, not Comm"),
        ("TypeError", "comm_init_rank() argument 'comm' must be a handle slot address (an int, such as Comm's "
                      "handle_ptr), not Comm"),
        ("TypeError", "comm_window_register() argument 'win' must be a handle slot address (an int, such as "
                      "Window's handle_ptr), not Window"),
    ]
    assert grow == "ok" and [(n, a[0]) for n, a in calls] == [("ncclCommGrow", 0)]


def test_communicator_takes_a_comm(stub_python):
    r = stub_python("nccl").run("""
        import nccl.core as nc
        c = nc.Communicator(b.Comm(0x5151_0000))
        result = (c.ptr, catch(nc.Communicator, b.Window(1))[:2])
    """)
    assert r == (0x5151_0000, ("TypeError", "Communicator() argument 'ptr' must be a Comm or an int, not Window"))


def test_refcounts_over_many_calls(stub_python):
    """Handle objects in and out of the bindings, on success and failure paths, in and out of
    groups: no reference is gained or lost, and no handle outlives its last user."""
    r = stub_python("nccl").run("""
        import gc, sys
        comm, win, raw = b.Comm(0x5555_0000), b.Window(0x6666_0000), bytes(128)
        def live():
            gc.collect()
            return sum(type(o) in (b.Comm, b.Window) for o in gc.get_objects())

        counts = lambda: [sys.getrefcount(comm), sys.getrefcount(win), sys.getrefcount(raw)]
        before, live_before = counts(), live()
        for _ in range(50_000):
            b.all_reduce(1, 2, 3, 7, 0, comm, 0)
            b.win_get_user_ptr(comm, win)
        for _ in range(10_000):
            b.comm_init_rank(2, raw, 0)
            b.comm_split(comm, 0, 0, 0)
            b.comm_window_register(comm, 1, 8, 0)
            b.comm_init_rank(comm.handle_ptr, 2, raw, 0)
        for _ in range(2_000):
            b.group_start()
            b.comm_init_rank(2, raw, 0)
            b.comm_window_register(comm, 1, 8, 0)
            b.comm_init_all(2, None)
            b.group_end()
        ok = ([x - y for x, y in zip(counts(), before)], live() - live_before)
        stub.script("ncclAllReduce", 4)
        stub.script("ncclCommInitRank", 5)
        stub.script("ncclCommSplit", 5)
        failures = 0
        for _ in range(10_000):
            for call in (lambda: b.all_reduce(1, 2, 3, 7, 0, comm, 0), lambda: b.comm_init_rank(2, raw, 0),
                         lambda: b.comm_split(comm, 0, 0, 0)):
                try:
                    call()
                except b.NCCLError:
                    failures += 1
        for _ in range(5_000):
            for bad in (lambda: b.all_reduce(1, 2, 3, 7, 0, win, 0), lambda: b.all_reduce(comm, 2, 3, 7, 0, 4, 0),
                        lambda: b.comm_destroy(b.Comm())):
                try:
                    bad()
                except (TypeError, ValueError):
                    failures += 1
        gc.collect()
        result = (ok, [x - y for x, y in zip(counts(), before)], live() - live_before, failures)
    """)
    ok, counts, live, failures = r
    assert ok == ([0, 0, 0], 0)
    assert counts == [0, 0, 0] and live == 0 and failures == 45_000
