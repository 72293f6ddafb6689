"""The communicators a process group runs on, one per kind of tensor (docs/api/torch.md#devices).

* CPU tensors: the host backend. Where nccl.core loaded it (every machine without a GPU, or
  NCCL_LIBRARY=host) that is an nccl.core Communicator (``HostCommunicator``: its C methods take
  the tensors directly, the cheapest path, recorded by the flight recorder); where nccl.core loaded
  a GPU library, a second handle on the bundled host backend (``_hostlib.HostLibraryChannel``).
* CUDA/ROCm tensors: an nccl.core Communicator on the loaded GPU library, called on torch's
  current stream (``StreamChannel``).

Every channel offers nccl.core.Communicator's collective and point-to-point methods (without the
stream argument), ``group_start``/``group_end`` of its library, ``work(result)`` (the Work of a
call that just ran), ``destroy`` and ``abort``. The unique id of each travels through the Store
torch hands the process group (``exchange_id``).
"""

from __future__ import annotations

import os
import warnings
from datetime import timedelta
from typing import Any, Callable

import torch
import torch.distributed as dist

from nccl._errors import FunctionNotFoundError, NCCLError
from nccl.bindings import nccl as _b
from nccl.core import Communicator, UniqueId, get_unique_id
from nccl.torch._hostlib import HostLibraryChannel
from nccl.torch._work import DoneWork, StreamWork

__all__ = ["HostCommunicator", "StreamChannel", "open_cpu_channel", "open_device_channel", "exchange_id"]

TIMEOUT_VARIABLE = "NCCL_HOST_TIMEOUT"
_warned_timeouts: set[float] = set()


class HostCommunicator(Communicator):
    """An nccl.core Communicator on the host backend, with the channel's extra methods."""

    group_start = staticmethod(_b.group_start)
    group_end = staticmethod(_b.group_end)

    def work(self, result: list[torch.Tensor]) -> DoneWork:
        return DoneWork(result)


class StreamChannel:
    """An nccl.core Communicator on a GPU library: every call runs on torch's current stream of
    the communicator's device, and its Work waits through an event on that stream."""

    def __init__(self, comm: Communicator, device: torch.device) -> None:
        self.comm, self.device = comm, device
        self.rank, self.nranks = comm.rank, comm.nranks
        self.group_start = _b.group_start
        self.group_end = _b.group_end

    def _stream(self) -> Any:
        return torch.cuda.current_stream(self.device)

    def work(self, result: list[torch.Tensor]) -> StreamWork:
        return StreamWork(result, self._stream())

    def __getattr__(self, name: str) -> Callable[..., None]:
        # the collective and point-to-point methods: Communicator's, with stream= filled in
        method = getattr(self.comm, name)

        def on_stream(*args: Any) -> None:
            method(*args, stream=self._stream().cuda_stream)

        return on_stream

    def destroy(self) -> None:
        self.comm.destroy()

    def abort(self) -> None:
        self.comm.abort()


def exchange_id(store: dist.Store, key: str, rank: int, make: Callable[[], bytes], timeout: timedelta) -> bytes:
    """Rank 0 makes the id and publishes it under ``key``; the others wait for it (at most
    ``timeout``, init_process_group's)."""
    if rank == 0:
        uid = make()
        store.set(key, uid)
        return uid
    try:
        store.wait([key], timeout)
    except dist.DistStoreError as exc:
        raise dist.DistStoreError(f"nccl4py: rank {rank} waited {timeout} for rank 0's unique id "
                                  f"(store key {key!r}): {exc}") from exc
    return bytes(store.get(key))


def apply_host_timeout(timeout: timedelta) -> None:
    """init_process_group's timeout as the host backend's deadline: NCCL_HOST_TIMEOUT, which the
    library reads once, when it is first used in the process, is set here (before that) unless
    the user set it."""
    global _chosen_by_user
    if _chosen_by_user is None:
        _chosen_by_user = TIMEOUT_VARIABLE in os.environ
    if not _chosen_by_user and TIMEOUT_VARIABLE not in os.environ:
        os.environ[TIMEOUT_VARIABLE] = f"{timeout.total_seconds():g}"


_chosen_by_user: bool | None = None


def check_host_timeout(timeout: timedelta, effective: float | None) -> None:
    """Warns, once per timeout, when the deadline in force (``effective``, seconds) is not this
    group's timeout: the library was in use before the first process group, or an earlier group
    had another timeout. A deadline the user chose with NCCL_HOST_TIMEOUT is theirs: no warning."""
    seconds = timeout.total_seconds()
    if effective is None or _chosen_by_user or abs(effective - seconds) < 1e-3 or seconds in _warned_timeouts:
        return
    _warned_timeouts.add(seconds)
    warnings.warn(f"nccl4py: the host backend's deadline is {effective:g} s, fixed when the library was first "
                  f"used in this process; this process group's timeout of {seconds:g} s does not apply to "
                  f"its CPU operations (set {TIMEOUT_VARIABLE} before the first process group to choose it)",
                  RuntimeWarning, stacklevel=2)


def _host_timeout_in_force() -> float | None:
    """NCCL_HOST_TIMEOUT as the loaded host backend reads it (its parameter API), in seconds."""
    try:
        return float(_b.param_get_parameter(TIMEOUT_VARIABLE))
    except (NCCLError, FunctionNotFoundError, ValueError):
        return None


def open_cpu_channel(store: dist.Store, rank: int, size: int, timeout: timedelta) -> Any:
    """The host-backend communicator of the group's CPU tensors (collective over the group)."""
    apply_host_timeout(timeout)
    if _b.get_library_flavour() == "host":
        uid = exchange_id(store, "nccl4py/cpu", rank, lambda: bytes(get_unique_id()), timeout)
        with warnings.catch_warnings():
            # a group of one rank (dist.new_subgroups(group_size=1)) is meant: no launcher notice
            warnings.filterwarnings("ignore", "rank .* creates a 1-rank communicator", RuntimeWarning)
            comm = HostCommunicator.init(size, rank, UniqueId.from_bytes(uid))
        check_host_timeout(timeout, _host_timeout_in_force())
        return comm
    uid = exchange_id(store, "nccl4py/cpu", rank, HostLibraryChannel.unique_id, timeout)
    return HostLibraryChannel(size, rank, uid)


def open_device_channel(store: dist.Store, rank: int, size: int, timeout: timedelta,
                        device: torch.device) -> StreamChannel:
    """The GPU communicator of the group's tensors on ``device`` (collective over the group: every
    rank makes its first call on GPU tensors together)."""
    flavour = _b.get_library_flavour()
    if flavour == "host":
        raise RuntimeError(f"nccl4py: a tensor on {device} needs NCCL or RCCL, but nccl4py loaded the host "
                           "backend (no GPU library was found, or NCCL_LIBRARY=host)")
    key = f"nccl4py/{device.type}"
    uid = exchange_id(store, key, rank, lambda: bytes(get_unique_id()), timeout)
    with torch.cuda.device(device):
        comm = Communicator.init(size, rank, UniqueId.from_bytes(uid))
    return StreamChannel(comm, device)
