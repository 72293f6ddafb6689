"""Versions and error strings of nccl.core (API.md section 5.13), and the unique id helpers."""

import functools
import pathlib
import warnings

from packaging.version import Version as _PkgVersion

from nccl._show_versions import _decode_version
from nccl._version import __version__ as _nccl4py_version
from nccl.core._unique_id import UniqueId, get_unique_id

__all__ = ["Version", "get_version", "get_lib_version", "get_lib_path", "get_error_string",
           "UniqueId", "get_unique_id"]


class Version:
    """The library version (from its version code) and this package's version."""

    def __init__(self, nccl_version):
        self.nccl_version = _decode_version(int(nccl_version))
        self.nccl4py_version = _PkgVersion(_nccl4py_version)

    def __repr__(self):
        return (f"Version(\n"
                f"  nccl_version={self.nccl_version},\n"
                f"  nccl4py_version={self.nccl4py_version},\n"
                f")")

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return (self.nccl_version, self.nccl4py_version) == (other.nccl_version, other.nccl4py_version)

    def __hash__(self):
        return hash((self.nccl_version, self.nccl4py_version))


@functools.lru_cache(maxsize=1)
def _cached_version():
    from nccl.bindings import nccl as _b

    return Version(_b.get_version())


def get_version():
    """Deprecated: use nccl.get_version() or nccl.show_versions()."""
    warnings.warn("nccl.core.get_version is deprecated; use nccl.get_version (full-stack including "
                  "libnccl_ep) or nccl.show_versions (human-readable) instead.",
                  DeprecationWarning, stacklevel=2)
    return _cached_version()


def get_lib_version():
    """The loaded library's version (for RCCL, the NCCL version it tracks)."""
    from nccl.bindings import nccl as _b

    return _decode_version(_b.get_version())


def get_lib_path():
    """The path of the loaded library (NCCL, RCCL or the host backend), or None."""
    from nccl.bindings import nccl as _b

    path = _b.get_library_path()
    return pathlib.Path(path) if path else None


def get_error_string(nccl_result):
    """ncclGetErrorString for a Result member or int."""
    from nccl.bindings import nccl as _b

    return _b.get_error_string(int(nccl_result))
