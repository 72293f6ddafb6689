"""The hostile objects: what a caller can hand a C callable in place of one argument.

Each entry makes, from the argument's honest value (`base`) and the case's world (world.py), an
object that lies, raises, or runs code at the worst moment: while the C code converts the
arguments. The actions a callback takes are the world's: destroy or abort the communicator the
call uses, close or resize its buffers, empty every list the call was given, collect garbage
whose finalizer does all of that. Entries that replace the honest value by another one (huge,
negative, ...) are marked `lies`: at a raw-address parameter of nccl.bindings such a value is a
bad pointer, which stays the caller's responsibility (docs/api/bindings.md#raw-pointers), so
those cases are not run there.
"""

import gc
import operator
import sys

import numpy as np


def as_int(base):
    """The int an honest value stands for (a Comm, a PointerBox, an int), or 0."""
    try:
        return operator.index(base)
    except TypeError:
        return 0


class Entry:
    def __init__(self, name, make, lies=False, needs=None):
        self.name, self.make, self.lies, self.needs = name, make, lies, needs


class Hostile(Exception):
    """What the raising objects raise: a case that ends in it ended in a Python exception."""


# ---- actions a callback takes (world.py runs them on the case's communicator and buffers) ----

def act(world, what):
    if what == "destroy":
        world.destroy_comm(abort=False)
    elif what == "abort":
        world.destroy_comm(abort=True)
    elif what == "close":
        world.close_buffers()
    elif what == "clear":
        world.clear_lists()
    elif what == "collect":
        _Finalized(world)  # a cycle with a finalizer that does all of the above
        gc.collect(0)  # the youngest generation holds the new cycle


class _Finalized:
    def __init__(self, world):
        self.world, self.me = world, self

    def __del__(self):
        for what in ("clear", "close", "destroy"):
            try:
                act(self.world, what)
            except Exception:
                pass


# ---- ints and int-likes ----

class Index:
    """An int-like whose __index__ (and __int__) first acts, then answers base (or raises)."""

    def __init__(self, world, base, what, answer=None):
        self.world, self.base, self.what, self.answer = world, base, what, answer

    def __index__(self):
        act(self.world, self.what)
        if self.answer is not None:
            return self.answer()
        return as_int(self.base)

    __int__ = __index__


class WrongIndex:
    def __index__(self):
        return "not an int"


class RaisingIndex:
    def __index__(self):
        raise Hostile("__index__ raised")


class IntSubclass(int):
    """An int subclass: its value is used as is, no __index__ is asked."""


# ---- objects whose every attribute read acts first (properties, __class__ for isinstance) ----

class Proxy:
    """Stands for base: every attribute read (a property, __dlpack__, __cuda_array_interface__,
    _internal, vendor_id ...) first acts, then answers base's attribute; isinstance() sees base's
    class through __class__."""

    def __init__(self, world, base, what):
        object.__setattr__(self, "_p", (world, base, what))

    def __getattr__(self, name):
        world, base, what = object.__getattribute__(self, "_p")
        act(world, what)
        return getattr(base, name)

    @property
    def __class__(self):
        world, base, what = object.__getattribute__(self, "_p")
        act(world, what)
        return type(base)


# ---- containers ----

def _listed(base):
    return list(base) if isinstance(base, (list, tuple)) else [base]


def poisoned_list(world, base, first):
    """list(base) (or [base]) with its first item replaced by first(items): the issue's pattern
    when first empties the list (items) from its __index__ or a property."""
    items = _listed(base)
    world.lists.append(items)
    if items:
        items[0] = first(items, items[0])
    else:
        items.append(first(items, 0))
    return items


class Emptier:
    """An item whose __index__, __int__ and attributes empty its list, then stand for item."""

    def __init__(self, items, item, grow=False):
        self.items, self.item, self.grow = items, item, grow

    def _strike(self):
        if self.grow:
            self.items.extend(object() for _ in range(1000))
        else:
            self.items.clear()  # the items it held go now, with their last reference

    def __index__(self):
        self._strike()
        return as_int(self.item)

    def __getattr__(self, name):
        self._strike()
        return getattr(self.item, name)


class LyingList(list):
    """A list subclass whose len() and iteration lie; the storage C reads is the truth."""

    def __len__(self):
        return 10**6

    def __iter__(self):
        raise Hostile("__iter__ raised")


def raising_generator():
    yield 0
    raise Hostile("the generator raised")


# ---- buffers, DLPack and CUDA array interface objects ----

class TemporaryDLPack:
    """A producer whose capsule holds the only reference to its memory (a temporary array)."""

    def __init__(self, device=(1, 0), dtype=np.int8):
        self.device, self.dtype = device, dtype

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kw):
        kw.pop("stream", None)
        return np.ones(64, self.dtype).__dlpack__(**kw)


class ActingDLPack(TemporaryDLPack):
    def __init__(self, world, what):
        super().__init__()
        self.world, self.what = world, what

    def __dlpack__(self, **kw):
        act(self.world, self.what)
        return super().__dlpack__(**kw)


class BadDLPack:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kw):
        return self.capsule()


def used_capsule():
    cap = np.ones(4, np.int8).__dlpack__()
    np.from_dlpack(_Holder(cap))  # consumes it (renamed used_dltensor)
    return cap


class _Holder:
    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kw):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


class CAI:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


class ClearingBool:
    """data's readonly flag: its truth value empties the interface dict first."""

    def __init__(self, d):
        self.d = d

    def __bool__(self):
        self.d.clear()
        return False


def clearing_cai():
    d = {"version": 3, "typestr": "|i1", "shape": (64,), "strides": None}
    d["data"] = (0x1000, ClearingBool(d))
    return CAI(d)


class LyingBuffer:
    """A buffer exporter (Python 3.12+) that hands out a different buffer at each request."""

    def __init__(self):
        self.n = 0

    def __buffer__(self, flags):
        self.n += 1
        return memoryview(bytearray(128 if self.n == 1 else 1))

    def __release_buffer__(self, view):
        view.release()


# ---- streams ----

class Stream:
    def __init__(self, world, what, pair=None):
        self.world, self.what, self.pair = world, what, pair

    def __cuda_stream__(self):
        act(self.world, self.what)
        return self.pair() if self.pair is not None else (0, 0)


def emptying_pair():
    pair = [0]
    pair.append(Emptier(pair, 0))
    return pair


# ---- the catalogue ----

ACTIONS = ("destroy", "abort", "close", "clear", "collect")

ENTRIES = [
    # values and types
    Entry("none", lambda w, base: None),
    Entry("bool", lambda w, base: True, lies=True),
    Entry("float", lambda w, base: 1.5),
    Entry("str", lambda w, base: "x"),
    Entry("huge", lambda w, base: 2**200),
    Entry("2**64-1", lambda w, base: 2**64 - 1, lies=True),
    Entry("negative", lambda w, base: -1, lies=True),
    Entry("int-subclass", lambda w, base: IntSubclass(as_int(base))),
    Entry("index-wrong-type", lambda w, base: WrongIndex()),
    Entry("index-raises", lambda w, base: RaisingIndex()),
    Entry("object", lambda w, base: object()),
    Entry("bytes", lambda w, base: bytes(128)),
]
# an __index__ and a proxy of the honest value that act first
for _what in ACTIONS:
    ENTRIES.append(Entry(f"index-{_what}s", lambda w, base, _what=_what: Index(w, base, _what)))
    ENTRIES.append(Entry(f"proxy-{_what}s", lambda w, base, _what=_what: Proxy(w, base, _what)))
ENTRIES.append(Entry("index-huge-after-destroy", lambda w, base: Index(w, base, "destroy", lambda: 2**70), lies=True))
ENTRIES += [
    # containers: the item the C code converts first empties (or grows) the list being walked
    Entry("list-emptied", lambda w, base: poisoned_list(w, base, lambda items, item: Emptier(items, item))),
    Entry("list-grown", lambda w, base: poisoned_list(w, base, lambda items, item: Emptier(items, item, grow=True))),
    Entry("list-emptied-1000", lambda w, base: poisoned_list(w, _listed(base) + [object()] * 1000,
                                                             lambda items, item: Emptier(items, item))),
    Entry("list-destroys", lambda w, base: poisoned_list(w, base, lambda items, item: Index(w, item, "destroy"))),
    Entry("list-item-raises", lambda w, base: poisoned_list(w, base, lambda items, item: RaisingIndex())),
    Entry("list-huge-item", lambda w, base: poisoned_list(w, base, lambda items, item: 2**70), lies=True),
    Entry("list-lying-len", lambda w, base: LyingList(_listed(base))),
    Entry("tuple", lambda w, base: tuple(_listed(base))),
    Entry("generator-raises", lambda w, base: raising_generator()),
    Entry("empty-list", lambda w, base: []),
    # buffers
    Entry("dlpack-temporary", lambda w, base: TemporaryDLPack()),
    Entry("dlpack-lies-device", lambda w, base: TemporaryDLPack(device=(2, 0))),
    Entry("dlpack-destroys", lambda w, base: ActingDLPack(w, "destroy")),
    Entry("dlpack-closes", lambda w, base: ActingDLPack(w, "close")),
    Entry("dlpack-not-capsule", lambda w, base: BadDLPack(lambda: 42)),
    Entry("dlpack-used-capsule", lambda w, base: BadDLPack(used_capsule)),
    Entry("dlpack-raises", lambda w, base: BadDLPack(RaisingIndex().__index__)),
    Entry("cai-lies-pointer", lambda w, base: CAI({"version": 3, "typestr": "|i1", "shape": (64,),
                                                   "data": (0xdead0000, False)})),
    Entry("cai-clears-itself", lambda w, base: clearing_cai()),
    Entry("cai-not-dict", lambda w, base: CAI([1, 2])),
    Entry("buffer-changes", lambda w, base: LyingBuffer(),
          needs=None if sys.version_info >= (3, 12) else "__buffer__ needs Python 3.12"),
    Entry("memoryview-strided", lambda w, base: memoryview(bytearray(128))[::2]),
    Entry("readonly-bytes", lambda w, base: bytes(64)),
    Entry("complex-array", lambda w, base: np.zeros(8, np.complex64)),
    Entry("byteswapped-array", lambda w, base: np.zeros(16, ">i4")),
    Entry("mmap", lambda w, base: w.mmap()),
    # streams
    Entry("stream-destroys", lambda w, base: Stream(w, "destroy")),
    Entry("stream-aborts", lambda w, base: Stream(w, "abort")),
    Entry("stream-closes", lambda w, base: Stream(w, "close")),
    Entry("stream-pair-emptied", lambda w, base: Stream(w, "clear", emptying_pair)),
    Entry("stream-bad-version", lambda w, base: Stream(w, "clear", lambda: (1, 0))),
]

assert len({e.name for e in ENTRIES}) == len(ENTRIES), "entry names must be unique"
