"""CPU tensors on a machine whose nccl4py loaded a GPU library (docs/api/torch.md#devices).

nccl.core drives one library per process: on a GPU machine that is NCCL or RCCL, which cannot
touch host memory. The process group's CPU tensors then go to the bundled host backend through a
second handle on it, opened here with ctypes (``RTLD_LOCAL``; the host library binds its own
symbols with -Bsymbolic, so a real libnccl in the same process does not capture its calls). The
methods mirror nccl.core.Communicator's for torch tensors: count and datatype come from the
tensors, with the same conventions for which buffer gives the count. Every call is synchronous,
as on the host backend through nccl.core. These calls are not in the flight recorder
(docs/api/trace.md), which sees nccl.core's library only.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from nccl import _ext
from nccl._errors import NCCLError, NcclInvalid
from nccl.core.interop.torch import _dtype_table
from nccl.torch._work import DoneWork

__all__ = ["HostLibraryChannel", "host_library"]

_ID_BYTES = 128


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_ubyte * _ID_BYTES)]


_P, _N, _I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
# (name, argument types after the buffers' (pointer, count, datatype) prefix), NCCL's order
_SIGNATURES = {
    "ncclGetUniqueId": [ctypes.POINTER(_UniqueId)],
    "ncclCommInitRank": [ctypes.POINTER(_P), _I, _UniqueId, _I],
    "ncclCommDestroy": [_P],
    "ncclCommAbort": [_P],
    "ncclGroupStart": [],
    "ncclGroupEnd": [],
    "ncclAllReduce": [_P, _P, _N, _I, _I, _P, _P],
    "ncclBroadcast": [_P, _P, _N, _I, _I, _P, _P],
    "ncclReduce": [_P, _P, _N, _I, _I, _I, _P, _P],
    "ncclAllGather": [_P, _P, _N, _I, _P, _P],
    "ncclReduceScatter": [_P, _P, _N, _I, _I, _P, _P],
    "ncclAlltoAll": [_P, _P, _N, _I, _P, _P],
    "ncclGather": [_P, _P, _N, _I, _I, _P, _P],
    "ncclScatter": [_P, _P, _N, _I, _I, _P, _P],
    "ncclSend": [_P, _N, _I, _I, _P, _P],
    "ncclRecv": [_P, _N, _I, _I, _P, _P],
}

_library: Any = None


def host_library() -> Any:
    """The bundled host backend as a ctypes library, opened once (nccl._ext._host_library_path)."""
    global _library
    if _library is None:
        lib = ctypes.CDLL(_ext._host_library_path(), mode=ctypes.RTLD_LOCAL)
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        lib.ncclGetLastError.argtypes, lib.ncclGetLastError.restype = [_P], ctypes.c_char_p
        _library = lib
    return _library


class HostLibraryChannel:
    """A host-backend communicator over the second handle: nccl.core.Communicator's collective
    methods for contiguous CPU tensors of an NCCL datatype, plus group_start/group_end."""

    def __init__(self, nranks: int, rank: int, uid: bytes) -> None:
        self._lib = lib = host_library()
        self._types = {dt: int(member) for dt, member in _dtype_table(torch).items()}
        comm = _P()
        self._check(lib.ncclCommInitRank(ctypes.byref(comm), nranks, _UniqueId.from_buffer_copy(uid), rank), None)
        self._comm = comm
        self.rank, self.nranks = rank, nranks

    @staticmethod
    def unique_id() -> bytes:
        uid = _UniqueId()
        HostLibraryChannel._check(host_library().ncclGetUniqueId(ctypes.byref(uid)), None)
        return bytes(uid)

    @staticmethod
    def _check(status: int, comm: Any) -> None:
        if status != 0:
            text = host_library().ncclGetLastError(comm)
            raise NCCLError(status, text.decode(errors="replace") if text else "")

    def _buf(self, t: torch.Tensor, name: str) -> tuple[int, int, int]:
        dt = self._types.get(t.dtype)
        if dt is None or not t.is_contiguous() or t.device.type != "cpu":
            raise NcclInvalid(f"{name}: a contiguous CPU tensor of an NCCL datatype is needed, got "
                              f"{t.dtype} on {t.device}{'' if t.is_contiguous() else ', not contiguous'}")
        return t.data_ptr(), t.numel(), dt

    def work(self, result: list[torch.Tensor]) -> DoneWork:
        return DoneWork(result)

    def group_start(self) -> None:
        self._check(self._lib.ncclGroupStart(), None)

    def group_end(self) -> None:
        self._check(self._lib.ncclGroupEnd(), self._comm)

    def allreduce(self, send: torch.Tensor, recv: torch.Tensor, op: int) -> None:
        s, n, dt = self._buf(send, "allreduce")
        self._check(self._lib.ncclAllReduce(s, self._buf(recv, "allreduce")[0], n, dt, op, self._comm, None),
                    self._comm)

    def broadcast(self, send: torch.Tensor | None, recv: torch.Tensor, root: int) -> None:
        r, n, dt = self._buf(recv, "broadcast")
        s = self._buf(send, "broadcast")[0] if send is not None and self.rank == root else r
        self._check(self._lib.ncclBroadcast(s, r, n, dt, root, self._comm, None), self._comm)

    def reduce(self, send: torch.Tensor, recv: torch.Tensor | None, op: int, root: int) -> None:
        s, n, dt = self._buf(send, "reduce")
        r = self._buf(recv, "reduce")[0] if recv is not None and self.rank == root else s
        self._check(self._lib.ncclReduce(s, r, n, dt, op, root, self._comm, None), self._comm)

    def allgather(self, send: torch.Tensor, recv: torch.Tensor) -> None:
        s, n, dt = self._buf(send, "allgather")
        self._check(self._lib.ncclAllGather(s, self._buf(recv, "allgather")[0], n, dt, self._comm, None),
                    self._comm)

    def reduce_scatter(self, send: torch.Tensor, recv: torch.Tensor, op: int) -> None:
        s, n, dt = self._buf(send, "reduce_scatter")
        r = self._buf(recv, "reduce_scatter")[0]
        self._check(self._lib.ncclReduceScatter(s, r, n // self.nranks, dt, op, self._comm, None), self._comm)

    def alltoall(self, send: torch.Tensor, recv: torch.Tensor) -> None:
        s, n, dt = self._buf(send, "alltoall")
        r = self._buf(recv, "alltoall")[0]
        self._check(self._lib.ncclAlltoAll(s, r, n // self.nranks, dt, self._comm, None), self._comm)

    def gather(self, send: torch.Tensor, recv: torch.Tensor | None, root: int) -> None:
        s, n, dt = self._buf(send, "gather")
        r = self._buf(recv, "gather")[0] if recv is not None and self.rank == root else 0
        self._check(self._lib.ncclGather(s, r or None, n, dt, root, self._comm, None), self._comm)

    def scatter(self, send: torch.Tensor | None, recv: torch.Tensor, root: int) -> None:
        r, n, dt = self._buf(recv, "scatter")
        s = self._buf(send, "scatter")[0] if send is not None and self.rank == root else 0
        self._check(self._lib.ncclScatter(s or None, r, n, dt, root, self._comm, None), self._comm)

    def send(self, buf: torch.Tensor, peer: int) -> None:
        p, n, dt = self._buf(buf, "send")
        self._check(self._lib.ncclSend(p, n, dt, peer, self._comm, None), self._comm)

    def recv(self, buf: torch.Tensor, peer: int) -> None:
        p, n, dt = self._buf(buf, "recv")
        self._check(self._lib.ncclRecv(p, n, dt, peer, self._comm, None), self._comm)

    def destroy(self) -> None:
        comm, self._comm = self._comm, None
        if comm is not None:
            self._check(self._lib.ncclCommDestroy(comm), None)

    def abort(self) -> None:
        comm, self._comm = self._comm, None
        if comm is not None:
            self._check(self._lib.ncclCommAbort(comm), None)
