"""ProcessGroupNccl4py: the process group of the "nccl4py" torch.distributed backend.

torch accepts an out-of-tree backend as a Python subclass of ``torch.distributed.ProcessGroup``
(``Backend.register_backend``): torch.distributed's Python functions call its methods by name, and
its C++ callers (DDP's reducer, ``_broadcast_coalesced``, ``_verify_params_across_processes``)
reach the same methods through the class's pybind trampoline. This module holds the group's
life: its communicators (``_channels``), the queue of point-to-point operations, coalescing,
shutdown and abort. The collectives are in ``_collectives.CollectivesMixin``.

Point-to-point operations are queued, not run at once: a ``send`` on the host backend waits for its
receiver, so two ranks that each ``isend`` before they ``irecv`` would wait for each other. The
queue runs, as one NCCL group (whose sends and receives progress together), at the first wait on
any of its Works, at the group's next collective, or at the end of a coalescing block; a blocking
``dist.send``/``dist.recv`` waits at once (docs/api/torch.md#point-to-point).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, Callable

import torch
import torch.distributed as dist

from nccl import _ext
from nccl.torch import BACKEND_NAME
from nccl.torch._channels import open_cpu_channel, open_device_channel
from nccl.torch._collectives import CollectivesMixin, _one
from nccl.torch._convert import movable
from nccl.torch._work import DoneWork, PendingWork

__all__ = ["ProcessGroupNccl4py"]

# The flight recorder attributes a call made through torch (torch.distributed, DDP, FSDP) to the
# line of the program that called torch, as it does for nccl4py's own Python code
# (docs/api/trace.md#what-is-recorded).
_ext._trace_front_dir(os.path.dirname(torch.__file__) + os.sep)


class _Closed:
    """The channel of a group after shutdown() or abort(): every call says so."""

    def __init__(self, how: str) -> None:
        self._how = how

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"nccl4py: this process group was {self._how}; it runs no more operations")


# A queued operation: (the channel it runs on, the call; it returns a finishing step or None)
Queued = tuple[Any, Callable[[], Any]]


class ProcessGroupNccl4py(CollectivesMixin, dist.ProcessGroup):
    """The process group torch.distributed makes for ``backend="nccl4py"``.

    Created by torch (``init_process_group``, ``new_group``) through the creator that
    ``nccl.torch.register()`` registers, with the group's Store, rank, size and timeout. The CPU
    communicator is created at once, the GPU one at the group's first call on GPU tensors.
    """

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)
        self._store, self._rank, self._size, self._timeout = store, rank, size, timeout
        self._group_name = self._group_desc = ""
        self._pending: list[Queued] = []
        self._coalescing = False
        self._device: Any = None  # the GPU channel, made at the first call on GPU tensors
        self._cpu: Any = open_cpu_channel(store, rank, size, timeout)

    # ---- identity ----

    def getBackendName(self) -> str:  # noqa: N802 - the name torch's trampoline calls
        return BACKEND_NAME

    def __repr__(self) -> str:
        return f"ProcessGroupNccl4py(rank={self._rank}, size={self._size})"

    # torch keeps a group's name and description in the group's C++ backends, of which a Python
    # process group has none (ProcessGroup.group_name raises "name not set"): they live here.
    # DeviceMesh (FSDP2, DTensor) looks groups up by name.

    def _set_group_name(self, name: str) -> None:
        self._group_name = name

    @property
    def group_name(self) -> str:
        return self._group_name

    def _set_group_desc(self, desc: str) -> None:
        self._group_desc = desc

    @property
    def group_desc(self) -> str:
        return self._group_desc

    # ---- channels ----

    def _channel(self, t: torch.Tensor) -> Any:
        if t.is_cpu:
            return self._cpu
        return self._device if self._device is not None and t.device == self._device.device else self._gpu(t)

    def _gpu(self, t: torch.Tensor) -> Any:
        if t.device.type != "cuda":
            raise RuntimeError(f"nccl4py: tensors on {t.device} are not supported (CPU and CUDA/ROCm only)")
        if isinstance(self._cpu, _Closed):
            return self._cpu
        if self._device is not None:
            raise RuntimeError(f"nccl4py: this process group runs on {self._device.device}; a tensor on {t.device} "
                               "cannot join it (one GPU per rank, as with the nccl backend)")
        self._device = open_device_channel(self._store, self._rank, self._size, self._timeout, t.device)
        return self._device

    def _close(self, how: str) -> list[Any]:
        """The open channels, which the group forgets; queued operations never waited for are dropped."""
        channels = [ch for ch in (self._cpu, self._device) if ch is not None and not isinstance(ch, _Closed)]
        self._pending = []
        self._cpu, self._device = _Closed(how), None
        return channels

    # ---- running operations: at once, or queued ----

    def _submit(self, ch: Any, call: Callable[[], Any], result: list[torch.Tensor], async_op: bool) -> Any:
        """Runs ``call`` on ``ch`` (after any queued operations) and returns its Work when the
        caller wants one; inside a coalescing block, queues it."""
        if self._coalescing:
            self._pending.append((ch, call))
            return PendingWork(result, self)
        if self._pending:
            self._flush()
        finish = call()
        if finish is not None:
            finish()
        return ch.work(result) if async_op else None

    def _flush(self) -> None:
        """Runs the queued operations as one group per channel, then their finishing steps."""
        queued, self._pending = self._pending, []
        if not queued:
            return
        channels: list[Any] = []
        for ch, _ in queued:
            if ch not in channels:
                channels.append(ch)
        finishes = []
        started = []
        try:
            for ch in channels:
                ch.group_start()
                started.append(ch)
            for _, call in queued:
                finish = call()
                if finish is not None:
                    finishes.append(finish)
        finally:
            for ch in reversed(started):
                ch.group_end()
        for finish in finishes:
            finish()

    def _start_coalescing(self, device: torch.device) -> None:
        self._coalescing = True

    def _end_coalescing(self, device: torch.device) -> DoneWork:
        self._coalescing = False
        self._flush()
        return DoneWork([])

    # ---- point-to-point ----

    def send(self, tensors: list[torch.Tensor], dstRank: int, tag: int = 0) -> PendingWork:  # noqa: N803
        t = _one(tensors, "send")
        ch = self._channel(t)
        buf, _ = movable(t, written=False)
        self._pending.append((ch, lambda: ch.send(buf, dstRank)))
        return PendingWork(tensors, self)

    def recv(self, tensors: list[torch.Tensor], srcRank: int, tag: int = 0) -> PendingWork:  # noqa: N803
        t = _one(tensors, "recv")
        ch = self._channel(t)
        buf, back = movable(t, written=True)

        def call() -> Any:
            ch.recv(buf, srcRank)
            return back

        self._pending.append((ch, call))
        return PendingWork(tensors, self)

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int = 0) -> None:
        raise RuntimeError("nccl4py: receiving from any source (dist.recv/irecv without src) is not supported: "
                           "NCCL matches a receive with a send by the peer's rank; name the source rank")

    # ---- life ----

    def shutdown(self) -> None:
        """Destroys the group's communicators (torch's destroy_process_group calls it on every
        rank, group by group in the same order). Queued operations that were never waited for
        are dropped."""
        for ch in self._close("shut down"):
            ch.destroy()

    def abort(self) -> None:
        """Aborts the group's communicators at once, without waiting for the other ranks."""
        for ch in self._close("aborted"):
            ch.abort()

