"""UniqueId and get_unique_id (docs/compatibility.md#unique-ids). Building ids from bytes needs no library;
get_unique_id() runs in a child interpreter against the host backend and the stub NCCL."""

import copy
import pickle

import numpy as np
import pytest

import nccl.bindings.nccl as b
from nccl.core import UniqueId, get_unique_id

PATTERN = bytes(range(128))


def test_default_is_zero():
    uid = UniqueId()
    assert bytes(uid) == bytes(128) == uid.as_bytes
    assert isinstance(uid._internal, b.UniqueId)


def test_wraps_a_binding_struct():
    raw = b.UniqueId.from_buffer(bytearray(PATTERN))
    uid = UniqueId(raw)
    assert uid._internal is raw and bytes(uid) == PATTERN
    with pytest.raises(TypeError):
        UniqueId(b"x" * 128)


@pytest.mark.parametrize("make", [bytes, bytearray, memoryview, lambda p: memoryview(bytearray(p))])
def test_from_bytes_copies(make):
    src = make(PATTERN)
    uid = UniqueId.from_bytes(src)
    assert bytes(uid) == PATTERN
    if isinstance(src, (bytearray, memoryview)) and not memoryview(src).readonly:
        memoryview(src)[0] = 0xFF
        assert bytes(uid) == PATTERN  # owned storage: the caller's buffer is not aliased


@pytest.mark.parametrize("size", [0, 127, 129, 256])
def test_from_bytes_wrong_length(size):
    with pytest.raises(ValueError) as ei:
        UniqueId.from_bytes(bytes(size))
    assert str(ei.value) == "buffer length must be 128 bytes"


@pytest.mark.parametrize("bad", [None, 5, "x" * 128, [0] * 128])
def test_from_bytes_non_buffer(bad):
    with pytest.raises(TypeError):
        UniqueId.from_bytes(bad)


def test_from_bytes_int8_array():
    arr = np.frombuffer(PATTERN, dtype=np.uint8).astype(np.int8)
    assert bytes(UniqueId.from_bytes(arr)) == PATTERN


def test_from_bytes_multibyte_items():
    with pytest.raises(ValueError):
        UniqueId.from_bytes(np.zeros(32, dtype=np.int32))


def test_as_ndarray_shares_memory_and_is_writable():
    uid = UniqueId.from_bytes(PATTERN)
    arr = uid.as_ndarray
    assert isinstance(arr, np.recarray)
    assert arr.shape == (1,) and arr.dtype == b.unique_id_dtype and arr.flags.writeable
    assert bytes(arr.internal[0].astype(np.uint8)) == PATTERN
    arr.internal[0][0] = 7
    assert bytes(uid)[0] == 7
    assert arr.ctypes.data == uid.ptr


def test_as_ndarray_receive_side():
    # the MPI.Comm.Bcast pattern: a zero id is filled through its ndarray view
    uid = UniqueId()
    uid.as_ndarray[:] = np.frombuffer(PATTERN, dtype=np.uint8).view(b.unique_id_dtype)
    assert bytes(uid) == PATTERN


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle(protocol):
    uid = UniqueId.from_bytes(PATTERN)
    again = pickle.loads(pickle.dumps(uid, protocol))
    assert type(again) is UniqueId and bytes(again) == PATTERN and again._internal is not uid._internal


def test_getstate_setstate_and_copy():
    uid = UniqueId.from_bytes(PATTERN)
    assert uid.__getstate__() == PATTERN
    other = UniqueId()
    other.__setstate__(PATTERN)
    assert bytes(other) == PATTERN
    assert bytes(copy.deepcopy(uid)) == PATTERN


def test_repr():
    uid = UniqueId.from_bytes(PATTERN)
    assert repr(uid) == f"<UniqueId: {PATTERN[:8].hex()}...{PATTERN[-8:].hex()}>"


def test_eq_hash_by_bytes():
    a, c = UniqueId.from_bytes(PATTERN), UniqueId.from_bytes(PATTERN)
    assert a == c and hash(a) == hash(c) and len({a, c}) == 1
    assert a != UniqueId() and a != PATTERN


def test_ptr_is_struct_address():
    uid = UniqueId()
    assert uid.ptr == uid._internal.ptr != 0


def test_empty_calls_nothing():
    assert bytes(get_unique_id(empty=True)) == bytes(128)


def test_get_unique_id_host(fresh_python):
    r = fresh_python("""
import pickle
from nccl.core import get_unique_id, UniqueId
uid = get_unique_id()
result = (type(uid).__name__, bytes(uid), pickle.loads(pickle.dumps(uid)) == uid, bytes(get_unique_id()) != bytes(uid))
""", env={"NCCL_LIBRARY": "host"})
    assert r[0] == "UniqueId" and r[1] != bytes(128) and r[2] and r[3]


def test_get_unique_id_calls_the_library(stub_python):
    r = stub_python("nccl").run("""
from nccl.core import get_unique_id
stub.set_out("ncclGetUniqueId", 5)
result = (bytes(get_unique_id()), [c.name for c in stub.calls_to("ncclGetUniqueId")],
          bytes(get_unique_id(empty=True)), len(stub.calls_to("ncclGetUniqueId")))
""")
    assert r == (bytes((5 + i) & 0xFF for i in range(128)), ["ncclGetUniqueId"], bytes(128), 1)
