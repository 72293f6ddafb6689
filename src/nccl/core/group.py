"""Groups (docs/compatibility.md#groups): group_start, group_end, the group() context manager.

The per-thread group depth that register_window consults is kept in C, inside the binding
functions ``nccl.bindings.nccl.group_start``/``group_end``/``group_simulate_end``, so direct binding
calls count too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, overload

__all__ = ["group", "group_start", "group_end", "GroupSimInfo"]


@dataclass(frozen=True)
class GroupSimInfo:
    """The estimate of ncclGroupSimulateEnd (NCCL does not document the unit)."""

    estimated_time: float


def group_start() -> None:
    """ncclGroupStart: defer the following calls until the matching group_end()."""
    from nccl.bindings import nccl as _b

    _b.group_start()


@overload
def group_end(*, simulate: Literal[False] = False) -> None: ...
@overload
def group_end(*, simulate: Literal[True]) -> GroupSimInfo: ...
@overload
def group_end(*, simulate: bool) -> GroupSimInfo | None: ...
def group_end(*, simulate: bool = False) -> GroupSimInfo | None:
    """ncclGroupEnd, returning None; with ``simulate=True`` ncclGroupSimulateEnd, returning a
    GroupSimInfo."""
    from nccl.bindings import nccl as _b

    if simulate:
        info = _b.group_simulate_end()
        return GroupSimInfo(estimated_time=float(info.estimated_time))
    _b.group_end()
    return None


@contextlib.contextmanager
def group() -> Iterator[None]:
    """``with group():`` starts a group and ends it on exit, exceptions included."""
    group_start()
    try:
        yield
    finally:
        group_end()
