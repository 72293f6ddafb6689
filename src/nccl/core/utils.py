"""Versions and error strings of nccl.core (docs/compatibility.md#versions), and the unique id helpers.

``get_version``, ``VersionInfo``, ``LibraryInfo`` and ``show_versions`` are nccl4py 0.6.0's
(one implementation: nccl/_show_versions.py); ``Version``, ``get_lib_version`` and
``get_lib_path`` are 0.3.1's, kept for code written against it."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from packaging.version import Version as _PkgVersion

from nccl._show_versions import LibraryInfo, _decode_version, show_versions
from nccl._show_versions import get_version as _stack_version
from nccl._version import __version__ as _nccl4py_version
from nccl.core._unique_id import UniqueId, get_unique_id

__all__ = ["Version", "VersionInfo", "LibraryInfo", "get_version", "show_versions", "get_lib_version",
           "get_lib_path", "get_error_string", "UniqueId", "get_unique_id"]


@dataclass(frozen=True)
class VersionInfo:
    """nccl4py 0.6.0's version triple: this package, the NCCL header release the bindings follow,
    and the loaded library (None when nothing loads). ``nccl_version`` and ``nccl4py_version``
    keep nccl4py 0.3.1's ``Version`` attributes working on what ``get_version()`` returns."""

    nccl4py: _PkgVersion
    nccl_bindings: _PkgVersion
    libnccl: "LibraryInfo | None"

    @property
    def nccl_version(self) -> _PkgVersion | None:
        """The loaded library's version (nccl4py 0.3.1's name), or None when nothing loads."""
        return None if self.libnccl is None else self.libnccl.version

    @property
    def nccl4py_version(self) -> _PkgVersion:
        """This package's version (nccl4py 0.3.1's name)."""
        return self.nccl4py


def get_version() -> VersionInfo:
    """Versions of nccl4py, of the bindings' NCCL header and of the loaded library (loading it if
    needed), as nccl4py 0.6.0's ``nccl.core.get_version()``. ``nccl.get_version()`` keeps the
    top-level shape (nccl4py, nccl, nccl_ep)."""
    from nccl import _ext

    return VersionInfo(_PkgVersion(_nccl4py_version), _decode_version(_ext._ABI_VERSION), _stack_version().nccl)


class Version:
    """The library version (from its version code) and this package's version."""

    def __init__(self, nccl_version: int) -> None:
        self.nccl_version: _PkgVersion = _decode_version(int(nccl_version))
        self.nccl4py_version: _PkgVersion = _PkgVersion(_nccl4py_version)

    def __repr__(self) -> str:
        return (f"Version(\n"
                f"  nccl_version={self.nccl_version},\n"
                f"  nccl4py_version={self.nccl4py_version},\n"
                f")")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return (self.nccl_version, self.nccl4py_version) == (other.nccl_version, other.nccl4py_version)

    def __hash__(self) -> int:
        return hash((self.nccl_version, self.nccl4py_version))


def get_lib_version() -> _PkgVersion:
    """The loaded library's version (for RCCL, the NCCL version it tracks)."""
    from nccl.bindings import nccl as _b

    return _decode_version(_b.get_version())


def get_lib_path() -> pathlib.Path | None:
    """The path of the loaded library (NCCL, RCCL or the host backend), or None."""
    from nccl.bindings import nccl as _b

    path = _b.get_library_path()
    return pathlib.Path(path) if path else None


def get_error_string(nccl_result: int) -> str:
    """ncclGetErrorString for a Result member or int."""
    from nccl.bindings import nccl as _b

    return _b.get_error_string(int(nccl_result))
