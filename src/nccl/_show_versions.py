"""Version reporting: nccl.get_version() and nccl.show_versions()."""

import mmap
import pathlib
import re
from dataclasses import dataclass

from packaging.version import Version

from nccl._version import __version__

__all__ = ["__version__", "LibraryInfo", "VersionInfo", "get_version", "show_versions"]

_CUDA_BANNER = re.compile(rb"NCCL version [0-9][0-9.]*\+cuda([0-9]+\.[0-9]+)")


@dataclass(frozen=True)
class LibraryInfo:
    """A loaded library: its version, the CUDA release it was built for (NVIDIA's builds name one),
    its path, and its flavour ("nccl", "rccl" or "host"). str() gives "2.32.3+cuda12.9 @ /path"."""

    version: Version
    cuda_variant: "Version | None"
    path: "pathlib.Path | None"
    flavour: "str | None" = None

    def __str__(self):
        text = str(self.version)
        if self.cuda_variant is not None:
            text += f"+cuda{self.cuda_variant}"
        if self.path is not None:
            text += f" @ {self.path}"
        return text


@dataclass(frozen=True)
class VersionInfo:
    """What nccl.get_version() reports: this package's version, the loaded NCCL/RCCL library and the
    NCCL EP library (None where nothing is loaded or found)."""

    nccl4py: Version
    nccl: "LibraryInfo | None"
    nccl_ep: "LibraryInfo | None"


def _decode_version(code):
    """The Version of an NCCL version code, decoded by the C loader's decoder (both encodings)."""
    from nccl import _ext

    return Version(_ext._version_text(code))


def _cuda_variant(path, flavour):
    # NVIDIA builds carry an "NCCL version 2.x.y+cudaA.B" banner; RCCL and the host backend do not.
    if path is None or flavour != "nccl":
        return None
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            match = _CUDA_BANNER.search(m)
            variant = match.group(1).decode() if match else None
    except (OSError, ValueError):
        return None
    return Version(variant) if variant else None


def _library_info():
    from nccl import _ext

    path, flavour, code, _ = _ext._library_info()
    p = pathlib.Path(path) if path else None
    return LibraryInfo(_decode_version(code), _cuda_variant(path, flavour), p, flavour)


def get_version():
    """Versions of this package and of the NCCL/RCCL library (loading it if needed).

    The library field is None when no library can be loaded."""
    try:
        lib = _library_info()
    except RuntimeError:  # NotSupportedError: nothing loads
        lib = None
    return VersionInfo(Version(__version__), lib, None)


def show_versions():
    """Print this package's version and the loaded library's, one row each."""
    info = get_version()
    lib = "not available" if info.nccl is None else f"{info.nccl} ({info.nccl.flavour})"
    print()
    print("NCCL versions")
    print("-------------")
    for label, value in (("nccl4py", str(info.nccl4py)), ("libnccl", lib), ("libnccl_ep", "not available")):
        print(f"{label:<12}: {value}")
