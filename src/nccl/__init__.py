"""nccl4py: Python bindings for RCCL and NCCL, with a host (CPU) backend for machines without a GPU.

Importing this package loads no library. Low-level bindings are in nccl.bindings.

``nccl`` is a regular package that other distributions can add to: an ``nccl/`` directory on any
sys.path entry (nccl-extensions' ``nccl.ep`` and ``nccl.m2n``, a ``pip install --target`` or
``PYTHONPATH`` directory) is a portion of it, as with nccl4py 0.4.1+'s namespace package
(docs/compatibility.md#the-nccl-namespace). Ours comes first, so its modules win a name clash.
"""

import pkgutil as _pkgutil

__path__ = _pkgutil.extend_path(__path__, __name__)

from nccl import _errors  # noqa: F401 (hands nccl._ext the exception classes its C code raises, errors.c)
from nccl._hip_compat import register_cuda_core_shim as _register_cuda_core_shim
from nccl._show_versions import LibraryInfo, VersionInfo, get_version, show_versions
from nccl._version import __version__

__all__ = ["__version__", "LibraryInfo", "VersionInfo", "get_version", "show_versions"]

# Before anything imports cuda.core: on hosts without a usable real cuda.core, the HIP-backed shim
# is registered under that name in sys.modules (nothing is opened here).
_register_cuda_core_shim()
