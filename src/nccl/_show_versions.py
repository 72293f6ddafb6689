"""Version reporting: nccl.get_version() and nccl.show_versions().

The ``nccl_ep`` row is NVIDIA's libnccl_ep, which the nccl-extensions distribution (``nccl.ep``)
brings. The private hooks nccl4py's and the RCCL fork's code reach for keep their meaning:
``_nccl_ep_importable()`` says whether ``nccl.ep`` imports (the seam tests patch), ``_ep_bindings``
is nccl-extensions' low-level ``nccl_ep`` module or None where it is not installed (read on first
use, so ``import nccl`` imports nothing of it), and ``_nccl_ep_library_info()`` is the
``LibraryInfo`` of libnccl_ep or None.
"""

import mmap
import pathlib
import re
import sys
from dataclasses import dataclass

from packaging.version import Version

from nccl._version import __version__

__all__ = ["__version__", "LibraryInfo", "VersionInfo", "get_version", "show_versions"]

_CUDA_BANNER = re.compile(rb"NCCL version [0-9][0-9.]*\+cuda([0-9]+\.[0-9]+)")
_EP_CUDA_BANNER = re.compile(rb"NCCL EP version [0-9][0-9.]*\+cuda([0-9]+\.[0-9]+)")


@dataclass(frozen=True)
class LibraryInfo:
    """A loaded library: its version, the CUDA release it was built for (NVIDIA's builds name one),
    its path, and its flavour ("nccl", "rccl" or "host"). str() gives "2.32.3+cuda12.9 @ /path"."""

    version: Version
    cuda_variant: "Version | None"
    path: "pathlib.Path | None"
    flavour: "str | None" = None

    def __str__(self) -> str:
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


def _cuda_variant(path, flavour, banner=_CUDA_BANNER):
    # NVIDIA builds carry an "NCCL version 2.x.y+cudaA.B" banner (libnccl_ep: "NCCL EP version");
    # RCCL and the host backend do not.
    if path is None or flavour != "nccl":
        return None
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            match = banner.search(m)
            variant = match.group(1).decode() if match else None
    except (OSError, ValueError):
        return None
    return Version(variant) if variant else None


def _library_info():
    from nccl import _ext

    path, flavour, code, _ = _ext._library_info()
    p = pathlib.Path(path) if path else None
    return LibraryInfo(_decode_version(code), _cuda_variant(path, flavour), p, flavour)


def _nccl_ep_importable():
    """True when ``nccl.ep`` (nccl-extensions) imports here."""
    try:
        import nccl.ep  # noqa: F401
    except ImportError:
        return False
    return True


def _load_ep_bindings():
    try:
        from nccl._extensions.bindings import nccl_ep
    except ImportError:
        return None
    return nccl_ep


def __getattr__(name):
    if name == "_ep_bindings":  # resolved once, on first use
        value = globals()[name] = _load_ep_bindings()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _nccl_ep_library_info():
    """LibraryInfo of libnccl_ep (loading it if needed), or None when nccl.ep does not import, its
    bindings are absent or the library does not load."""
    if not _nccl_ep_importable():
        return None
    bindings = sys.modules[__name__]._ep_bindings
    if bindings is None:
        return None
    try:
        code = bindings.get_version()
        path = bindings.get_library_path()
    except (RuntimeError, OSError):  # libnccl_ep (or the CUDA runtime it needs) does not load
        return None
    p = pathlib.Path(path) if path else None
    return LibraryInfo(_decode_version(code), _cuda_variant(path, "nccl", _EP_CUDA_BANNER), p, "nccl")


def get_version() -> VersionInfo:
    """Versions of this package, of the NCCL/RCCL library and of libnccl_ep (loading them if needed).

    A library field is None when that library cannot be loaded (libnccl_ep: when nccl-extensions
    is not installed)."""
    try:
        lib = _library_info()
    except RuntimeError:  # NotSupportedError: nothing loads
        lib = None
    return VersionInfo(Version(__version__), lib, _nccl_ep_library_info())


def show_versions() -> None:
    """Print this package's version and the loaded library's, one row each."""
    info = get_version()
    lib = "not available" if info.nccl is None else f"{info.nccl} ({info.nccl.flavour})"
    ep = "not available" if info.nccl_ep is None else str(info.nccl_ep)
    print()
    print("NCCL versions")
    print("-------------")
    for label, value in (("nccl4py", str(info.nccl4py)), ("libnccl", lib), ("libnccl_ep", ep)):
        print(f"{label:<12}: {value}")
