"""The flight recorder's Python face (docs/api/trace.md): ``dump_trace``. Recording and writing
are C (``src/ext/trace/trace*.c``); this module only names the call."""

from __future__ import annotations

__all__ = ["dump_trace"]


def dump_trace() -> str | None:
    """Write this process's flight-recorder file now: every communicator's ring of its last calls,
    to ``rank<R>.jsonl`` in ``NCCL4PY_TRACE_DIR`` (docs/api/trace.md#the-file-format).

    The file is written whole and renamed into place, on the calling thread with the GIL released;
    no collective waits for it.

    Returns:
        The file's path, or None when it could not be written (the failure is reported once on
        standard error; nothing is raised).
    """
    from nccl import _ext

    path: str | None = _ext._dump_trace()
    return path
