"""UniqueId and get_unique_id (docs/compatibility.md#unique-ids).

The C core gets ``UniqueId`` (nccl.core registers it) and uses its ``_internal`` attribute (a
``nccl.bindings.nccl.UniqueId`` struct wrapper holding the 128 bytes), so both are a contract.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

import numpy as _np

if TYPE_CHECKING:
    from typing_extensions import Buffer as _Bytes  # bytes, bytearray, memoryview, ...

    from nccl.bindings.nccl import UniqueId as _UniqueIdStruct

__all__ = ["UniqueId", "get_unique_id"]

_SIZE = 128


def _bindings() -> ModuleType:
    from nccl.bindings import nccl as _b

    return _b


class UniqueId:
    """The 128-byte id that ranks share to create a communicator.

    Send it as bytes (``bytes(uid)`` / ``UniqueId.from_bytes``), by pickle, or as a NumPy record
    (``as_ndarray``, e.g. for ``MPI.Comm.Bcast``). Equal ids compare and hash equal.
    """

    __slots__ = ("_internal", "__weakref__")

    def __init__(self, _internal: _UniqueIdStruct | None = None) -> None:
        if _internal is None:
            _internal = _bindings().UniqueId()
        elif not isinstance(_internal, _bindings().UniqueId):
            raise TypeError(f"_internal must be a nccl.bindings.nccl.UniqueId or None, "
                            f"got {type(_internal).__name__}")
        self._internal = _internal

    @staticmethod
    def from_bytes(b: _Bytes) -> UniqueId:
        """A new id holding a copy of exactly 128 one-byte items (bytes, bytearray, memoryview)."""
        view = memoryview(b)  # TypeError for non-buffers
        if view.itemsize != 1:
            raise ValueError("buffer itemsize must be 1 byte")
        if view.nbytes != _SIZE:
            raise ValueError(f"buffer length must be {_SIZE} bytes")
        uid = UniqueId()
        memoryview(uid._internal).cast("B")[:] = view.cast("B")
        return uid

    def __bytes__(self) -> bytes:
        return bytes(self._internal)

    @property
    def as_bytes(self) -> bytes:
        """The 128 raw bytes."""
        return bytes(self._internal)

    @property
    def as_ndarray(self) -> _np.recarray[Any, Any]:
        """A writable 1-element ``np.recarray`` of ``unique_id_dtype`` sharing this id's memory."""
        dtype = _bindings().unique_id_dtype
        arr = _np.frombuffer(memoryview(self._internal), dtype=_np.uint8).view(dtype)
        return arr.view(_np.recarray)

    @property
    def ptr(self) -> int:
        """The address of the 128-byte struct."""
        return self._internal.ptr

    def __getstate__(self) -> bytes:
        return bytes(self._internal)

    def __setstate__(self, state: bytes) -> None:
        self._internal = UniqueId.from_bytes(state)._internal

    def __reduce__(self) -> tuple[Callable[[bytes], UniqueId], tuple[bytes]]:
        return (_from_state, (bytes(self._internal),))

    def __repr__(self) -> str:
        raw = bytes(self._internal)
        return f"<UniqueId: {raw[:8].hex()}...{raw[-8:].hex()}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UniqueId):
            return NotImplemented
        return bytes(self._internal) == bytes(other._internal)

    def __hash__(self) -> int:
        return hash(bytes(self._internal))


def _from_state(state: bytes) -> UniqueId:
    return UniqueId.from_bytes(state)


def get_unique_id(empty: bool = False) -> UniqueId:
    """A new id from ncclGetUniqueId (loads the library); ``empty=True``: a zero id, no call."""
    if empty:
        return UniqueId()
    return UniqueId(_bindings().get_unique_id())
