"""The flight recorder's verdict: ``python -m nccl.trace DIR`` reads every rank's dump in DIR
(docs/api/trace.md) and says where the ranks parted: which rank, which call, which line.

    python -m nccl.trace DIR [--json] [--last K] [--job JOB]

The same from Python: ``nccl.trace.analyze(DIR).verdict``."""

from __future__ import annotations

import os

from nccl.trace._files import TraceInputError, load
from nccl.trace._report import Report
from nccl.trace._verdict import Finding, findings_of

__all__ = ["analyze", "Report", "Finding", "TraceInputError"]


def analyze(path: str | os.PathLike, job: str | None = None) -> Report:
    """Reads the dumps in folder `path` (one job's; `job` chooses among several) and lines the
    ranks up.

    Returns:
        A Report: ``verdict`` (the first finding in words), ``findings`` (each with its kind, the
        ranks it names, the communicator and the collective call number), ``text()`` and
        ``to_json()``.

    Raises:
        TraceInputError: nothing in `path` can be analysed (no dump, or several jobs and no `job`).
    """
    folder = load(path, job)
    groups, findings = findings_of(folder)
    return Report(folder, groups, findings)
