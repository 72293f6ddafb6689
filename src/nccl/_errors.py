"""Exceptions of the binding layer.

NCCLError is constructed as NCCLError(status) (upstream's convention) and turns itself into the
subclass for that status, so ``except NCCLError`` and ``.status`` checks keep working while callers
can also catch one code. Constructing or unpickling one never loads a library.

The C core raises these classes: this module hands them to ``nccl._ext`` at its import (the
``nccl`` package imports it first), so C never looks them up by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from nccl import _ext  # the C module: importing it loads no library
from nccl._enums import Result

__all__ = [
    "NCCLError",
    "NCCLUnhandledCudaError",
    "NCCLSystemError",
    "NCCLInternalError",
    "NCCLInvalidArgument",
    "NCCLInvalidUsage",
    "NCCLRemoteError",
    "NCCLTimeout",
    "FunctionNotFoundError",
    "NotSupportedError",
    "HostBackendWarning",
    "NcclInvalid",
    "NCCLNullHandleError",
]


def _error_text(status: int) -> str:
    text: str = _ext._error_text(status)
    return text


# NCCL's text for some statuses ends with this hint; it is left out when the details it points to,
# the library's last error, follow in the same message.
_DEBUG_HINT = re.compile(r" \(run with NCCL_DEBUG=\w+ for details\)$")


class NCCLError(Exception):
    """A library call returned a status other than Success (0) or InProgress (7).

    The message is "<Name> (<status>): <the library's text for the status>", worded for the loaded
    library (HIP, not cuda, on RCCL), then "library's last error: <ncclGetLastError text>" when
    the library had one, in which case the text's "(run with NCCL_DEBUG=... for details)" is left
    out; ``last_error`` holds that text alone."""

    def __new__(cls, status: int, last_error: str = "", *args: Any, **kwargs: Any) -> NCCLError:
        if cls is NCCLError:
            cls = _BY_STATUS.get(int(status), NCCLError)
        return super().__new__(cls, status)

    def __init__(self, status: int, last_error: str = "") -> None:
        self.status: int = int(status)
        self.last_error: str = str(last_error) if last_error else ""
        super().__init__(self._message())

    def _message(self) -> str:
        try:
            name = Result(self.status).name
        except ValueError:
            name = "Unknown"
        text = f"{name} ({self.status}): {_error_text(self.status)}"
        if self.last_error:
            text = _DEBUG_HINT.sub("", text)
            # ncclGetLastError keeps the library's latest message, which may predate this call (RCCL
            # leaves its start-up warnings there): labelled as the library's, not as the cause.
            text += "\n  library's last error: " + self.last_error
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status,), {"last_error": self.last_error})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.last_error = state.get("last_error", "")
        self.args: tuple[Any, ...] = (self._message(),)


class NCCLUnhandledCudaError(NCCLError):
    """ncclUnhandledCudaError: a CUDA/HIP call made by the library failed."""


class NCCLSystemError(NCCLError):
    """ncclSystemError: a system call failed (memory, sockets, shared memory)."""


class NCCLInternalError(NCCLError):
    """ncclInternalError: an internal check of the library failed."""


class NCCLInvalidArgument(NCCLError):
    """ncclInvalidArgument: the library rejected an argument (a null pointer, a bad count, rank or type)."""


class NCCLInvalidUsage(NCCLError):
    """ncclInvalidUsage: the call is not allowed now (wrong order, a refused entry point, a mismatch between ranks)."""


class NCCLRemoteError(NCCLError):
    """ncclRemoteError: a peer failed or went away; the message names it."""


class NCCLTimeout(NCCLError):
    """ncclTimeout: an operation passed its deadline."""


_BY_STATUS = {
    1: NCCLUnhandledCudaError,
    2: NCCLSystemError,
    3: NCCLInternalError,
    4: NCCLInvalidArgument,
    5: NCCLInvalidUsage,
    6: NCCLRemoteError,
    8: NCCLTimeout,
}


class FunctionNotFoundError(NotImplementedError):
    """The loaded library does not export the C function a wrapper needs.

    The message names the function and the library version that lacks it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


class NotSupportedError(RuntimeError):
    """No NCCL/RCCL library could be loaded. ``attempts`` lists every candidate and its outcome."""

    def __init__(self, message: str, attempts: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.attempts: tuple[tuple[str, str], ...] = tuple(attempts)

    @classmethod
    def _from_attempts(cls, attempts: Iterable[tuple[str, str]]) -> NotSupportedError:
        lines = ["Could not load RCCL or NCCL library. Tried:"]
        lines += [f"  {candidate}: {outcome}" for candidate, outcome in attempts]
        lines.append("Set NCCL_LIBRARY to a path or SONAME, or to 'host' for the bundled host backend.")
        return cls("\n".join(lines), attempts)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0] if self.args else "", self.attempts))


class HostBackendWarning(RuntimeWarning):
    """The bundled host backend was chosen because this machine has no GPU.

    Emitted once per process; set NCCL_LIBRARY=host to choose the host backend without it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


class NcclInvalid(Exception):
    """nccl.core rejected an argument before calling the library (exported as nccl.core.NcclInvalid).

    It lives here, beside the binding exceptions, so the C core can raise it without importing
    nccl.core.
    """

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg: str = msg

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.msg,))

    def __repr__(self) -> str:
        return f"<NcclInvalid: {self.msg}>"


class NCCLNullHandleError(NcclInvalid, NCCLInvalidArgument, ValueError):
    """A null (0) or destroyed communicator or window, refused before the library is called.

    Raised by both layers with their own messages: ``nccl.bindings.nccl`` ("<fn>() argument
    '<arg>' must not be a null communicator", or ``window``) and ``nccl.core`` ("Cannot <op>:
    Communicator not initialized", ...). It is every error those callers expect: ``ValueError``
    (what the bindings raised before), ``NcclInvalid`` (what ``nccl.core`` raised before), and
    ``NCCLError`` with ``status`` 4, ``InvalidArgument`` (what NCCL 2.32 returns for a null handle;
    RCCL crashes on some, so the library is never called). ``last_error`` is empty.
    """

    def __new__(cls, msg: str, *args: Any, **kwargs: Any) -> NCCLNullHandleError:
        return Exception.__new__(cls, msg)

    def __init__(self, msg: str) -> None:
        Exception.__init__(self, msg)  # not super(): NCCLError.__init__ takes a status
        self.msg = msg
        self.status: int = int(Result.InvalidArgument)
        self.last_error: str = ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.msg,))


_ext._register(
    NCCLError=NCCLError, FunctionNotFoundError=FunctionNotFoundError, NotSupportedError=NotSupportedError,
    HostBackendWarning=HostBackendWarning, NcclInvalid=NcclInvalid, NCCLNullHandleError=NCCLNullHandleError,
)
