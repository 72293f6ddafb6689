"""The Work objects the nccl4py process group hands back (docs/api/torch.md#async-operations).

torch.distributed returns a Work for ``async_op=True`` and to its C++ callers (DDP's reducer asks
every allreduce for ``get_future()``); a synchronous call from Python gets none, as the backend
has already finished (host) or enqueued on torch's current stream (GPU) before it returns.

* ``DoneWork``: the operation completed before the call returned (every host-backend collective).
* ``StreamWork``: a GPU operation enqueued on a stream; an event recorded after it tells when it
  completes, and ``wait()`` makes the caller's current stream wait for it.
* ``PendingWork``: point-to-point operations are queued and run together, as one group, at the
  first ``wait()`` (or the group's next collective); see ``ProcessGroupNccl4py._flush``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.distributed import Work

__all__ = ["DoneWork", "StreamWork", "PendingWork"]


def _future(result: Any, devices: list[torch.device] | None = None) -> torch.futures.Future:
    fut: torch.futures.Future = torch.futures.Future(devices=devices)
    fut.set_result(result)
    return fut


class DoneWork(Work):
    """The operation completed inside the call; ``result()`` and the future hold its output tensors."""

    def __init__(self, result: list[torch.Tensor]) -> None:
        super().__init__()
        self._result = result

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def exception(self) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def result(self) -> list[torch.Tensor]:
        return self._result

    def get_future(self) -> torch.futures.Future:
        return _future(self._result)


class StreamWork(DoneWork):
    """A GPU operation enqueued on ``stream``: complete when the event recorded after it is."""

    def __init__(self, result: list[torch.Tensor], stream: Any) -> None:
        super().__init__(result)
        self._stream = stream
        self._event = torch.cuda.Event()
        self._event.record(stream)

    def wait(self, timeout: Any = None) -> bool:
        # As ProcessGroupNCCL's: the caller's current stream waits; the CPU does not block.
        torch.cuda.current_stream(self._stream.device).wait_event(self._event)
        return True

    def synchronize(self) -> None:
        self.wait()

    def is_completed(self) -> bool:
        return self._event.query()

    def get_future(self) -> torch.futures.Future:
        # A CUDA-aware future: set_result records events on the current streams of its devices,
        # which are ordered after our event once wait() has run.
        self.wait()
        return _future(self._result, [self._stream.device])


class PendingWork(DoneWork):
    """Point-to-point operations queued on ``group``: any wait or query runs the queue."""

    def __init__(self, result: list[torch.Tensor], group: Any) -> None:
        super().__init__(result)
        self._group = group

    def _run(self) -> None:
        group, self._group = self._group, None
        if group is not None:
            group._flush()

    def wait(self, timeout: Any = None) -> bool:
        self._run()
        return True

    def synchronize(self) -> None:
        self._run()

    def is_completed(self) -> bool:
        self._run()
        return True

    def get_future(self) -> torch.futures.Future:
        self._run()
        return _future(self._result)
